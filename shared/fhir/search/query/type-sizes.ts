// How many resources each type has, as search needs it: a type with fewer than the drive budget
// (bounded.ts) gains nothing from the bounded page (whatever plan is made reads at most that type's few
// rows) and pays for its larger statement (Patient?name=<family> at 2,900 against 1,900 req/s on
// Synthea x10). From the exact per-type counts of $get-resource-counts (resource_count, migration
// 0011), read at most every few seconds per connection pool.
import { poolOf } from '../../../db/cancellable'
import type { Sql } from '../../../db/client'
import { resourceCounts } from '../../repo/resource-counts'

const FRESH_MS = 5000

interface Sizes {
  at: number
  counts: Map<string, number>
  pending?: Promise<Map<string, number>>
}

const byPool = new WeakMap<object, Sizes>()

/** The number of resources of `type` (tombstones included), at most FRESH_MS old: a number while the
 *  counts are fresh (no await on the hot path), else a promise of it once they are read again. */
export function typeSize(sql: Sql, type: string): number | Promise<number> {
  const pool = poolOf(sql)
  const s = byPool.get(pool)
  if (s && Date.now() - s.at <= FRESH_MS) return s.counts.get(type) ?? 0
  return refreshed(sql, pool, s).then((counts) => counts.get(type) ?? 0)
}

async function refreshed(sql: Sql, pool: object, s: Sizes | undefined): Promise<Map<string, number>> {
  if (s?.pending) {
    await s.pending
    return (byPool.get(pool) as Sizes).counts
  }
  const pending = resourceCounts(sql).then((rows) => new Map(rows.map((r) => [r.type, r.count])))
  const entry: Sizes = { at: s?.at ?? 0, counts: s?.counts ?? new Map(), pending }
  byPool.set(pool, entry)
  entry.counts = await pending
  entry.at = Date.now()
  entry.pending = undefined
  return entry.counts
}
