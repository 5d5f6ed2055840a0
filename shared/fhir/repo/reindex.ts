// The storage side of reindexing: the index rows of current versions recomputed under the current search
// parameters, without a new version. A resource updated since it was read is left alone: its own write
// already indexed it. Extraction (CPU) and the write (database) are separate steps, so a job can extract
// the next batch while the database writes this one. Keyset pages of the current resources a selection
// names feed the $reindex job (reindex/reindex-job.ts).
import type { Sql, TxSql } from '../../db/client'
import type { Fragment } from '../../db/fragments'
import { parseFhirJson } from '../format/json'
import type { IndexRowSet, IndexWriter } from './collaborators'

export interface ReindexRow {
  rid: string
  type: string
  version: number
  content: string
}

export interface PreparedBatch {
  rows: ReindexRow[]
  extracted: IndexRowSet
}

/** Full-text rows depend on the content only, unchanged by a reindex: rebuilt only when asked. */
export interface ReindexOptions {
  fulltext?: boolean
}

export function prepareBatch(indexes: IndexWriter, rows: ReindexRow[], opts: ReindexOptions = {}): PreparedBatch {
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
export function reindexBatch(tx: TxSql, indexes: IndexWriter, rows: ReindexRow[], opts: ReindexOptions = {}): Promise<number> {
  return writeBatch(tx, indexes, prepareBatch(indexes, rows, opts), opts)
}

/** `where`: a condition on `resource r0` (a search's, reindex/reindex-job.ts). */
export async function countCurrent(sql: Sql, where: Fragment): Promise<number> {
  const [{ n }] = await sql<{ n: string }[]>`select count(*)::bigint as n from resource r0 where ${where}`
  return Number(n)
}

/** The next `limit` resources `where` selects after rid `after`, in rid order. */
export function currentPage(sql: Sql, where: Fragment, after: string, limit: number): Promise<ReindexRow[]> {
  return sql<ReindexRow[]>`
    select r0.rid::text as rid, r0.res_type as type, r0.version, r0.content from resource r0
    where ${where} and r0.rid > ${after}::bigint order by r0.rid limit ${limit}`
}
