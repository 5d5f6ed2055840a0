// Rate limiting, the one implementation of every surface (issue 19): per API key on /fhir and the patient
// API, per client address for traffic without a valid key. A fixed window counted in Redis, shared by
// every API node; in memory when there is no Redis (one process). A request over the limit is refused
// with the seconds until the window ends (Retry-After, at least 1), and answers carry the IETF headers
// RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers).
//
// Counting costs no Redis round trip per request: each node counts in memory and adds its counts to the
// windows' Redis keys at most every FLUSH_MS, reading back the cluster's totals (one command for all the
// keys counted since the last flush, rate-counts.ts). A node's own requests are always counted at once;
// other nodes' join within FLUSH_MS while they have traffic, so a cluster may let through up to that much
// more than the limit. The flush is sent by the first request FLUSH_MS after the oldest unsent count, not
// by a timer: a timer's wakeup cost Bun ~70 µs of CPU, 20 times a second per node; a timer sends what a
// node's last requests counted (IDLE_FLUSH_MS after them) when no request comes.
import type { Config } from '../../shared/config'
import { type AppError, throttled } from '../../shared/errors'
import { ClientAddresses } from '../../shared/net/client-address'
import type { RateCounts } from './rate-counts'

export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Whole seconds until the window resets, at least 1. */
  retryAfterS: number
}

interface Window {
  /** The counted key (an API key's id, an address). */
  key: string
  /** Number of the window (time / windowMs). */
  n: number
  /** The cluster's count as Redis last answered, this node's flushed requests included. */
  known: number
  /** This node's requests not yet added in Redis. */
  pending: number
}

const FLUSH_MS = 50
/** When no request comes to send the counts: later than FLUSH_MS, so that under traffic it never fires. */
const IDLE_FLUSH_MS = 2 * FLUSH_MS
const MAX_KEYS = 100_000

export class RateLimiter {
  private readonly windows = new Map<string, Window>()
  /** The windows with requests not yet sent to Redis (a flush looks at these alone, not every key). */
  private unsent: Window[] = []
  private readonly counts: RateCounts | undefined
  private flushing: ReturnType<typeof setTimeout> | undefined
  /** When the unsent counts are due in Redis (the oldest's time plus FLUSH_MS). */
  private due = 0
  /** The window of the last request counted. */
  private lastCounted = -1

  private readonly policy: string

  constructor(private readonly opts: { limit: number; windowMs: number; prefix: string; counts?: RateCounts; name?: string }) {
    this.policy = `"${opts.name ?? 'default'}";q=${opts.limit};w=${Math.max(1, Math.round(opts.windowMs / 1000))}`
    this.counts = opts.counts
  }

  get enabled(): boolean {
    return this.opts.limit > 0
  }

  /** Counts one request of `key` (synchronous: no await on the hot path). */
  take(key: string): RateDecision {
    const now = Date.now()
    const w = this.window(key, now)
    if (w.pending++ === 0 && this.counts) {
      if (this.unsent.length === 0) {
        this.due = now + FLUSH_MS
        this.flushing ??= setTimeout(this.flush, IDLE_FLUSH_MS)
      }
      this.unsent.push(w)
    }
    if (this.unsent.length > 0 && now >= this.due) void this.flush()
    this.lastCounted = w.n
    return this.decision(w.known + w.pending, now)
  }

  /** Whether any key was counted in the current window (when none was, `over` is undefined for all). */
  get active(): boolean {
    return this.lastCounted === this.current()
  }

  /** Whether `key` is already over its limit, counting nothing (a refusal that need not look further). */
  over(key: string): RateDecision | undefined {
    const w = this.windows.get(key)
    if (!w || w.n !== this.current()) return undefined
    const d = this.decision(w.known + w.pending, Date.now())
    return d.allowed ? undefined : d
  }

  /** The RateLimit-Policy and RateLimit headers of a decision. */
  headers(d: RateDecision): Record<string, string> {
    return { 'ratelimit-policy': this.policy, ratelimit: `"${this.opts.name ?? 'default'}";r=${d.remaining};t=${d.retryAfterS}` }
  }

  private current(now = Date.now()): number {
    return Math.floor(now / this.opts.windowMs)
  }

  private window(key: string, now: number): Window {
    const n = this.current(now)
    let w = this.windows.get(key)
    if (w && w.n === n) return w
    if (this.windows.size >= MAX_KEYS) this.forgetOld(n)
    w = { key, n, known: 0, pending: 0 }
    this.windows.set(key, w)
    return w
  }

  private decision(count: number, now: number): RateDecision {
    const { limit, windowMs } = this.opts
    const resetAt = (Math.floor(now / windowMs) + 1) * windowMs
    return {
      allowed: count <= limit,
      limit,
      remaining: Math.max(0, limit - count),
      retryAfterS: Math.max(1, Math.ceil((resetAt - now) / 1000)),
    }
  }

  private forgetOld(n: number): void {
    for (const [k, w] of this.windows) if (w.n !== n) this.windows.delete(k)
    if (this.windows.size >= MAX_KEYS) this.windows.clear()
  }

  // Adds each window's requests since the last flush to its Redis key, in one command for all; a window's
  // key is never reused (its number is in the name) and expires after it, so a lost expiry cannot block
  // anyone. A window that has ended meanwhile is sent too: the other nodes counted in it.
  private readonly flush = async (): Promise<void> => {
    clearTimeout(this.flushing)
    this.flushing = undefined
    const batch = this.unsent
    this.unsent = []
    const keys = batch.map((w) => `${this.opts.prefix}:rate:${w.key}:${w.n}`)
    const counts = batch.map((w) => w.pending)
    // What is sent counts here at once (a request taken while Redis answers sees it).
    for (const w of batch) {
      w.known += w.pending
      w.pending = 0
    }
    try {
      const totals = await (this.counts as RateCounts).add(keys, counts, this.opts.windowMs + 1000)
      // The cluster's counts: this node's requests and every other node's.
      batch.forEach((w, i) => {
        const total = Number(totals[i])
        if (Number.isFinite(total)) w.known = Math.max(w.known, total)
      })
    } catch {
      // Redis unreachable: this node goes on limiting with its own count.
    }
  }
}

/** The limiters of an app's surfaces, made once per app (every route shares their counts). */
export interface SurfaceLimiters {
  /** Per API key on /fhir (FHIR_RATE_LIMIT). */
  fhir: RateLimiter
  /** Per client address, for requests without a valid key on every surface (ANONYMOUS_RATE_LIMIT). */
  anonymous: RateLimiter
  /** Per client address on the surfaces without per-key limits: hosted pages and operator endpoints (PAGE_RATE_LIMIT). */
  pages: RateLimiter
  /** The client address of a request, behind TRUSTED_PROXIES too. */
  addresses: ClientAddresses
}

const made = new WeakMap<object, SurfaceLimiters>()

export function surfaceLimiters(deps: { config: Config; rateCounts?: RateCounts }): SurfaceLimiters {
  let l = made.get(deps)
  if (!l) {
    const { limits, queuePrefix } = deps.config
    const windowMs = limits.rateWindowMs
    l = {
      fhir: new RateLimiter({ limit: limits.fhirRateLimit, windowMs, prefix: `${queuePrefix}:fhir`, counts: deps.rateCounts, name: 'per-key' }),
      anonymous: new RateLimiter({ limit: limits.anonymousRateLimit, windowMs, prefix: `${queuePrefix}:anon`, counts: deps.rateCounts, name: 'per-address' }),
      pages: new RateLimiter({ limit: limits.pageRateLimit, windowMs, prefix: `${queuePrefix}:pages`, counts: deps.rateCounts, name: 'pages-per-address' }),
      addresses: ClientAddresses.parse(deps.config.trustedProxies),
    }
    made.set(deps, l)
  }
  return l
}

/** 429 for a refused request, with Retry-After and the limiter's headers (rendered by each surface). */
export function tooManyRequests(limiter: RateLimiter, d: RateDecision, what: string): AppError {
  return throttled(`Too many requests: at most ${d.limit} ${what}; retry after ${d.retryAfterS} s`, d.retryAfterS, limiter.headers(d))
}
