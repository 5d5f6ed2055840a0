// The rate limiter's counts in Redis (rate-limit.ts, rate-counts.ts), against a real Redis: a flush is one
// command for every key counted since the last (it runs every FLUSH_MS on every node while traffic flows,
// so its cost is paid whatever the request rate); a window that ended before its flush still reaches
// Redis; and two nodes see each other's requests within a flush, refusing beyond the limit.
import { afterAll, expect, test } from 'bun:test'
import IORedis from 'ioredis'
import { type RateCounts, RedisRateCounts } from './rate-counts'
import { RateLimiter } from './rate-limit'

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const redis = new IORedis(url)

/**
 * Redis counts that can be waited on: `answered` resolves once every flush sent so far has its answer
 * (a fixed wait did not do: on a loaded machine a new connection's first flush took longer than 250 ms).
 * SLOW_REDIS_MS delays each answer, to check that the tests wait for it rather than for a time.
 */
class AnsweredCounts implements RateCounts {
  private readonly inner: RedisRateCounts
  private sent: Promise<unknown>[] = []
  constructor(url: string) {
    this.inner = new RedisRateCounts(url)
  }
  add(keys: string[], counts: number[], ttlMs: number): Promise<number[]> {
    const delay = Number(process.env.SLOW_REDIS_MS ?? 0)
    const answer = this.inner.add(keys, counts, ttlMs).then(async (totals) => {
      if (delay > 0) await Bun.sleep(delay)
      return totals
    })
    this.sent.push(answer.catch(() => {}))
    return answer
  }
  async answered(): Promise<void> {
    while (this.sent.length > 0) await this.sent.shift()
    await Bun.sleep(0) // the limiter takes the totals in the turn after
  }
  close(): void {
    this.inner.close()
  }
}
const counts = new AnsweredCounts(url)
const prefix = `rate-limit-test:${process.pid}:${Date.now()}`
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length) await redis.del(...keys)
  redis.disconnect()
  counts.close()
})

/** Waits past the limiter's idle flush (IDLE_FLUSH_MS, 100 ms), then for Redis's answer to every flush sent. */
async function flushed(...nodes: AnsweredCounts[]): Promise<void> {
  await Bun.sleep(150)
  for (const node of nodes.length > 0 ? nodes : [counts]) await node.answered()
}

test('a flush is one Redis command for all the keys counted since the last', async () => {
  const p = `${prefix}:one`
  const monitor = await new IORedis(url).monitor()
  const seen: string[][] = []
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    // What the script itself runs shows too, from "lua": only what the node sends counts.
    if (source !== 'lua' && args.some((a) => String(a).startsWith(p))) seen.push(args.map(String))
  })
  try {
    const limiter = new RateLimiter({ limit: 100, windowMs: 60_000, prefix: p, counts })
    for (const key of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) limiter.take(key)
    await flushed()
    // EVALSHA, and EVAL after it when Redis did not know the script yet.
    const names = seen.map((args) => args[0].toLowerCase())
    expect(names.filter((c) => !c.startsWith('eval'))).toEqual([]) // no INCRBY or PEXPIRE per key
    expect(names.length).toBeGreaterThanOrEqual(1)
    expect(names.length).toBeLessThanOrEqual(2)
    const n = Math.floor(Date.now() / 60_000)
    const stored = await Promise.all(['a', 'b', 'c'].map((k) => redis.get(`${p}:rate:${k}:${n}`)))
    expect(stored).toEqual(['3', '3', '3'])
    expect(await redis.pttl(`${p}:rate:a:${n}`)).toBeGreaterThan(60_000)
  } finally {
    monitor.disconnect()
  }
})

test('a window that ended before its flush is still counted in Redis', async () => {
  const p = `${prefix}:ended`
  const windowMs = 20 // shorter than FLUSH_MS: the key's next window begins before the flush
  const limiter = new RateLimiter({ limit: 100, windowMs, prefix: p, counts })
  const first = Math.floor(Date.now() / windowMs)
  limiter.take('k')
  while (Math.floor(Date.now() / windowMs) === first) await Bun.sleep(1)
  const second = Math.floor(Date.now() / windowMs)
  limiter.take('k')
  await flushed()
  expect(await redis.get(`${p}:rate:k:${first}`)).toBe('1')
  expect(await redis.get(`${p}:rate:k:${second}`)).toBe('1')
})

test('two nodes: each counts the other within a flush, and refuses over the limit', async () => {
  const p = `${prefix}:two`
  const opts = { limit: 10, windowMs: 60_000, prefix: p }
  const other = new AnsweredCounts(url)
  const a = new RateLimiter({ ...opts, counts })
  const b = new RateLimiter({ ...opts, counts: other })
  try {
    for (let i = 0; i < 6; i++) expect(a.take('key').allowed).toBe(true)
    await flushed(counts, other)
    // b has seen nothing itself, but learns a's six at its first flush.
    expect(b.take('key').remaining).toBe(9)
    await flushed(counts, other)
    expect(b.take('key').remaining).toBe(2)
    for (let i = 0; i < 2; i++) expect(b.take('key').allowed).toBe(true)
    const refused = b.take('key')
    expect(refused.allowed).toBe(false)
    expect(refused.retryAfterS).toBeGreaterThanOrEqual(1)
    // a still knows 6 of the cluster's 11: one more within a flush (the bound: FLUSH_MS worth), then refused.
    expect(a.take('key').allowed).toBe(true)
    await flushed(counts, other)
    expect(a.take('key').allowed).toBe(false)
  } finally {
    other.close()
  }
})
