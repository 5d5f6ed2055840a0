// The cluster's counts of the rate limits (rate-limit.ts), in Redis: each API node adds the requests it
// counted since its last flush and reads back every node's totals, in one command per flush (a Lua script:
// INCRBY and PEXPIRE of each key). A flush runs every FLUSH_MS on every node while traffic flows, so its
// cost is paid whatever the request rate.
//
// Through Bun's native Redis client, not the node's ioredis connection (BullMQ's): a flush of one key cost
// ioredis 125-190 µs of CPU (a pipeline of INCRBY and PEXPIRE; 110-155 as one EVALSHA) and Bun's client
// about 50 (bench/rate-flush.ts, timer excluded), 20 times a second per node. Like the job blobs' client
// (jobs/blobs.ts) it fails fast while Redis is down (the limiter then counts alone) and connects again at
// the next flush.
import { RedisClient } from 'bun'

/** Where the counts of every node meet. */
export interface RateCounts {
  /** Adds `counts[i]` to `keys[i]` (each key expiring `ttlMs` after), answering each key's new total. */
  add(keys: string[], counts: number[], ttlMs: number): Promise<number[]>
  close(): void
}

/** KEYS: the windows' keys; ARGV: the count to add to each, then the keys' time to live (ms). */
const ADD = `local ttl = ARGV[#KEYS + 1]
local totals = {}
for i, key in ipairs(KEYS) do
  totals[i] = redis.call('INCRBY', key, ARGV[i])
  redis.call('PEXPIRE', key, ttl)
end
return totals`

const SHA = new Bun.CryptoHasher('sha1').update(ADD).digest('hex')

/** Keys per command: a flush after a flood of new addresses sends several. */
const CHUNK = 1000

export class RedisRateCounts implements RateCounts {
  private readonly client: RedisClient
  private connecting: Promise<void> | undefined

  constructor(url: string) {
    this.client = new RedisClient(url, { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: 5000 })
  }

  async add(keys: string[], counts: number[], ttlMs: number): Promise<number[]> {
    if (!this.client.connected) {
      this.connecting ??= this.client.connect().finally(() => {
        this.connecting = undefined
      })
      await this.connecting
    }
    if (keys.length <= CHUNK) return this.send(keys, counts, ttlMs)
    const parts: Promise<number[]>[] = []
    for (let i = 0; i < keys.length; i += CHUNK) parts.push(this.send(keys.slice(i, i + CHUNK), counts.slice(i, i + CHUNK), ttlMs))
    return (await Promise.all(parts)).flat()
  }

  private async send(keys: string[], counts: number[], ttlMs: number): Promise<number[]> {
    const args = [String(keys.length), ...keys, ...counts.map(String), String(ttlMs)]
    try {
      return await this.client.send('EVALSHA', [SHA, ...args])
    } catch (err) {
      // The first flush since Redis started (or flushed its scripts): the script itself, cached from then on.
      if (!String((err as Error)?.message).includes('NOSCRIPT')) throw err
      return this.client.send('EVAL', [ADD, ...args])
    }
  }

  close(): void {
    this.client.close()
  }
}
