// Rows of `resource` per type, tombstones included (as HAPI counts them), from the delta rows every
// insert (the write statement's `counted` CTE, repo.ts) and delete (the trigger of migration 0011) append. Exact and independent of the table's
// size: a read sums a small table, and folds the deltas into one row per type once they pile up.
import type { Sql } from '../../db/client'

/** Fold when the deltas are this many more rows than there are types. */
const FOLD_AFTER = 500

export interface ResourceCount {
  type: string
  count: number
}

/** Types with at least one row, in code-point order of the type name. */
export async function resourceCounts(sql: Sql): Promise<ResourceCount[]> {
  const rows = await sql<{ res_type: string; n: string; parts: number }[]>`
    select res_type, sum(n)::text as n, count(*)::int as parts from resource_count group by res_type`
  const parts = rows.reduce((a, r) => a + r.parts, 0)
  if (parts > rows.length + FOLD_AFTER) await foldCounts(sql)
  return rows
    .filter((r) => Number(r.n) > 0)
    .map((r) => ({ type: r.res_type, count: Number(r.n) }))
    .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0))
}

/**
 * Replaces the committed deltas by one row per type. Deltas of transactions still running are not
 * visible and stay; two folds at once cannot both take a row (the second waits, then skips it).
 */
async function foldCounts(sql: Sql): Promise<void> {
  await sql`
    with d as (delete from resource_count returning res_type, n)
    insert into resource_count (res_type, n) select res_type, sum(n) from d group by res_type having sum(n) <> 0`
}
