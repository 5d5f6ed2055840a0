// CPU of one rate-limiter flush to Redis (api/http/rate-limit.ts), by client and command shape: what an
// API node pays every FLUSH_MS while traffic flows. Paced like the limiter (one flush per PACE_MS, default
// 5, awaited), so that each includes the event loop's wakeups for the timer and the reply.
// Usage: bun run bench/rate-flush.ts [flushes per variant] [keys per flush]
import { RedisClient } from 'bun'
import IORedis from 'ioredis'
import { waitReady } from '../shared/redis'
import { RedisRateCounts } from '../api/http/rate-counts'

const n = Number(process.argv[2] ?? 2000)
const keys = Number(process.argv[3] ?? 1)
const pace = Number(process.env.PACE_MS ?? 5)
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const prefix = `bench-rate-flush:${Date.now()}`

const SCRIPT = `local out = {}
for i, k in ipairs(KEYS) do
  out[i] = redis.call('INCRBY', k, ARGV[i])
  redis.call('PEXPIRE', k, ARGV[#KEYS + 1])
end
return out`

const io = new IORedis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
io.defineCommand('rateAdd', { lua: SCRIPT })
const bun = new RedisClient(url, { enableOfflineQueue: false, autoReconnect: false })
await bun.connect()
await waitReady(io)
const sha = (await io.script('LOAD', SCRIPT)) as string

const counts = new RedisRateCounts(url)
const names = Array.from({ length: keys }, (_, i) => `${prefix}:k${i}`)

const variants: Record<string, () => Promise<unknown>> = {
  'ioredis pipeline incrby+pexpire': async () => {
    const p = io.pipeline()
    for (const k of names) p.incrby(k, 3).pexpire(k, 2000)
    return p.exec()
  },
  'ioredis evalsha (defineCommand)': () =>
    (io as unknown as { rateAdd(...a: unknown[]): Promise<unknown> }).rateAdd(keys, ...names, ...names.map(() => 3), 2000),
  'ioredis incrby, pexpire (no pipeline)': () => Promise.all(names.flatMap((k) => [io.incrby(k, 3), io.pexpire(k, 2000)])),
  'bun evalsha': () => bun.send('EVALSHA', [sha, String(keys), ...names, ...names.map(() => '3'), '2000']),
  'bun incrby, pexpire': () => Promise.all(names.flatMap((k) => [bun.incrby(k, 3), bun.pexpire(k, 2000)])),
  'RedisRateCounts (rate-counts.ts)': () =>
    counts.add(
      names,
      names.map(() => 3),
      2000,
    ),
  'idle (timer only)': async () => {},
}

const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}

for (let round = 0; round < 2; round++) {
  for (const [name, flush] of Object.entries(variants)) {
    for (let i = 0; i < 200; i++) await flush() // warm
    const c0 = cpu()
    for (let i = 0; i < n; i++) {
      await Bun.sleep(pace)
      await flush()
    }
    const us = (cpu() - c0) / n
    console.log(`round ${round} ${name}: ${us.toFixed(1)} µs CPU per flush (${keys} key(s))`)
  }
}
await io.del(...names)
io.disconnect()
bun.close()
counts.close()
