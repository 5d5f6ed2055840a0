// Redis connections. Producers (API nodes) fail fast when Redis is down; BullMQ workers need
// maxRetriesPerRequest: null so that blocking commands wait instead of erroring.
import IORedis, { type Redis } from 'ioredis'

export type { Redis }

export function createRedis(url: string, role: 'producer' | 'worker'): Redis {
  return new IORedis(url, role === 'worker' ? { maxRetriesPerRequest: null } : { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false })
}
