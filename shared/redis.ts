// Redis connections. Producers (API nodes) fail fast when Redis is down; BullMQ workers need
// maxRetriesPerRequest: null so that blocking commands wait instead of erroring.
import IORedis, { type Redis } from 'ioredis'

export type { Redis }

export function createRedis(url: string, role: 'producer' | 'worker'): Redis {
  return new IORedis(url, role === 'worker' ? { maxRetriesPerRequest: null } : { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false })
}

/** Resolves once the connection is ready; rejects (naming the URL) if it is not within `timeoutMs`. */
export async function waitReady(redis: Redis, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady)
      reject(new Error(`Redis not reachable within ${timeoutMs} ms (REDIS_URL)`))
    }, timeoutMs)
    const onReady = () => {
      clearTimeout(timer)
      resolve()
    }
    redis.once('ready', onReady)
  })
}
