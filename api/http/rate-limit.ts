// Rate limiting per API key: a fixed window counter in Redis shared by every API node (INCR, and a
// PEXPIRE on the window's first hit); in memory when there is no Redis (one process). A request over the
// limit is refused with the seconds until the window ends (Retry-After, at least 1).
import type { Redis } from '../../shared/redis'

export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Whole seconds until the window resets, at least 1. */
  retryAfterS: number
}

export class RateLimiter {
  private readonly memory = new Map<string, { count: number; resetAt: number }>()

  constructor(private readonly opts: { limit: number; windowMs: number; prefix: string; redis?: Redis }) {}

  get enabled(): boolean {
    return this.opts.limit > 0
  }

  async take(key: string): Promise<RateDecision> {
    const { limit, windowMs } = this.opts
    const now = Date.now()
    const window = Math.floor(now / windowMs)
    const resetAt = (window + 1) * windowMs
    const count = this.opts.redis ? await this.takeRedis(`${this.opts.prefix}:rate:${key}:${window}`) : this.takeMemory(key, resetAt)
    return {
      allowed: count <= limit,
      limit,
      remaining: Math.max(0, limit - count),
      retryAfterS: Math.max(1, Math.ceil((resetAt - now) / 1000)),
    }
  }

  // One command per request: INCR, and PEXPIRE only on the window's first hit. A window's key is never
  // reused (its number is in the name), so a lost PEXPIRE cannot block anyone; it only leaks one key.
  private async takeRedis(k: string): Promise<number> {
    const redis = this.opts.redis as Redis
    const count = await redis.incr(k)
    if (count === 1) await redis.pexpire(k, this.opts.windowMs + 1000)
    return count
  }

  private takeMemory(key: string, resetAt: number): number {
    const hit = this.memory.get(key)
    if (hit && hit.resetAt === resetAt) return ++hit.count
    if (this.memory.size > 100_000) this.memory.clear()
    this.memory.set(key, { count: 1, resetAt })
    return 1
  }
}
