// Reindexing one batch: the index rows of current versions recomputed under the current search
// parameters, in one statement, without a new version. A resource updated since it was read is left
// alone: its own write already indexed it.
import type { TxSql } from '../../db/client'
import { parseFhirJson } from '../format/json'
import { indexRowCtes } from '../search/index-store'

export interface ReindexRow {
  rid: string
  type: string
  version: number
  content: string
}

/** Reindexes the rows in `tx`; answers how many were reindexed (the others changed in between). */
export async function reindexBatch(tx: TxSql, rows: ReindexRow[], baseUrl?: string): Promise<number> {
  if (rows.length === 0) return 0
  const rids = rows.map((r) => r.rid)
  const locked = await tx<{ rid: string; version: number }[]>`
    select rid::text, version from resource where rid = any(${rids}::bigint[]) and not deleted order by rid for update`
  const current = new Map(locked.map((r) => [r.rid, r.version]))
  const keep = rows.filter((r) => current.get(r.rid) === r.version)
  const ctes = indexRowCtes(
    tx,
    keep.map((r) => ({ rid: r.rid, type: r.type, resource: parseFhirJson(r.content) })),
    keep.map((r) => r.rid),
    baseUrl,
  )
  if (ctes) await tx`with ${ctes} select 1`
  return keep.length
}
