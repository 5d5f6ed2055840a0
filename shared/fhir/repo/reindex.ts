// The storage side of reindexing: the index rows of current versions recomputed under the current search
// parameters, without a new version. A resource updated since it was read is left alone: its own write
// already indexed it. Extraction (CPU) and the write (database) are separate steps, so a job can extract
// the next batch while the database writes this one.
import type { TxSql } from '../../db/client'
import { parseFhirJson } from '../format/json'
import type { IndexRowSet, IndexWriter } from './collaborators'
import type { CurrentRow } from './current-pages'

export interface PreparedBatch {
  rows: CurrentRow[]
  extracted: IndexRowSet
}

/** Full-text rows depend on the content only, unchanged by a reindex: rebuilt only when asked. */
export interface ReindexOptions {
  fulltext?: boolean
}

export function prepareBatch(indexes: IndexWriter, rows: CurrentRow[], opts: ReindexOptions = {}): PreparedBatch {
  const resources = rows.map((r) => ({ rid: r.rid, type: r.type, resource: parseFhirJson(r.content) }))
  return { rows, extracted: indexes.indexRows(resources, { fulltext: opts.fulltext ?? false }) }
}

/** Writes a prepared batch in `tx`; answers how many were reindexed (the others changed in between). */
export async function writeBatch(tx: TxSql, indexes: IndexWriter, batch: PreparedBatch, opts: ReindexOptions = {}): Promise<number> {
  if (batch.rows.length === 0) return 0
  const rids = batch.rows.map((r) => r.rid)
  const locked = await tx<{ rid: string; version: number }[]>`
    select rid::text, version from resource where rid = any(${rids}::bigint[]) and not deleted order by resource.rid for update`
  const current = new Map(locked.map((r) => [r.rid, r.version]))
  const keep = new Set(batch.rows.filter((r) => current.get(r.rid) === r.version).map((r) => r.rid))
  const ctes = indexes.writeIndexes(tx, batch.extracted, rids, { keep: keep.size === rids.length ? undefined : keep, fulltext: opts.fulltext ?? false })
  if (ctes) await tx`with ${ctes} select 1`
  return keep.size
}

/** Extracts and writes in one go (a pass). */
export function reindexBatch(tx: TxSql, indexes: IndexWriter, rows: CurrentRow[], opts: ReindexOptions = {}): Promise<number> {
  return writeBatch(tx, indexes, prepareBatch(indexes, rows, opts), opts)
}
