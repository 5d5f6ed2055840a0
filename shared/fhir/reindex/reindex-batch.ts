// Reindexing one batch: the index rows of current versions recomputed under the current search
// parameters, in one statement, without a new version. A resource updated since it was read is left
// alone: its own write already indexed it. Extraction (CPU) and the write (database) are separate
// steps, so a job can extract the next batch while the database writes this one.
import type { TxSql } from '../../db/client'
import { parseFhirJson } from '../format/json'
import { type ExtractedRows, extractedCtes, extractRows } from '../search/index-store'

export interface ReindexRow {
  rid: string
  type: string
  version: number
  content: string
}

export interface PreparedBatch {
  rows: ReindexRow[]
  extracted: ExtractedRows
}

export function prepareBatch(rows: ReindexRow[], baseUrl?: string, fulltext = false): PreparedBatch {
  return {
    rows,
    extracted: extractRows(
      rows.map((r) => ({ rid: r.rid, type: r.type, resource: parseFhirJson(r.content) })),
      baseUrl,
      fulltext,
    ),
  }
}

/**
 * Writes a prepared batch in `tx`; answers how many were reindexed (the others changed in between).
 * Search parameter rows are rebuilt; full-text rows (content only, unchanged by a reindex) are kept
 * unless `fulltext` asks for them too.
 */
export async function writeBatch(tx: TxSql, batch: PreparedBatch, fulltext = false): Promise<number> {
  if (batch.rows.length === 0) return 0
  const rids = batch.rows.map((r) => r.rid)
  const locked = await tx<{ rid: string; version: number }[]>`
    select rid::text, version from resource where rid = any(${rids}::bigint[]) and not deleted order by resource.rid for update`
  const current = new Map(locked.map((r) => [r.rid, r.version]))
  const keep = new Set(batch.rows.filter((r) => current.get(r.rid) === r.version).map((r) => r.rid))
  const ctes = extractedCtes(tx, batch.extracted, rids, keep.size === rids.length ? undefined : keep, fulltext)
  if (ctes) await tx`with ${ctes} select 1`
  return keep.size
}

/** Extracts and writes in one go (a pass, or one resource). */
export function reindexBatch(tx: TxSql, rows: ReindexRow[], baseUrl?: string, fulltext = false): Promise<number> {
  return writeBatch(tx, prepareBatch(rows, baseUrl, fulltext), fulltext)
}
