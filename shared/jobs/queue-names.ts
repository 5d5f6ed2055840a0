// The BullMQ queues that exist in Redis under our prefix, found by their meta keys: the dashboard and
// the metrics see every queue any worker has used, with no list to keep in step.
import type { Redis } from '../redis'

export async function queueNames(redis: Redis, prefix: string): Promise<string[]> {
  const names = new Set<string>()
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*:meta`, 'COUNT', 500)
    cursor = next
    for (const k of keys) names.add(k.slice(prefix.length + 1, -':meta'.length))
  } while (cursor !== '0')
  return [...names].sort()
}
