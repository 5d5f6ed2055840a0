// History queries over current and earlier versions, newest first, frozen at a snapshot instant so that
// paging by offset neither repeats nor skips entries while new writes arrive.
// https://hl7.org/fhir/R4/http.html#history
import type { Sql } from '../../db/client'
import type { StoredVersion } from './types'

export interface HistoryQuery {
  type?: string
  id?: string
  /** Only versions updated at or after this instant, `_since`. */
  since?: Date
  /** `_at` as a range: versions current at some point within [atStart, atEnd). */
  atStart?: Date
  atEnd?: Date
  /** The snapshot: versions written after it are not part of this history. */
  asOf: Date
}

export async function historyPage(sql: Sql, q: HistoryQuery, offset: number, count: number): Promise<StoredVersion[]> {
  const rows = await sql<any[]>`
    select rid::text, res_type, id, version, last_updated, deleted, content
    from (${versions(sql, q)}) v
    order by v.last_updated desc, v.rid desc, v.version desc
    limit ${count} offset ${offset}`
  return rows.map((r) => ({ rid: r.rid, type: r.res_type, id: r.id, version: r.version, lastUpdated: r.last_updated, deleted: r.deleted, content: r.content }))
}

export async function historyCount(sql: Sql, q: HistoryQuery): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from (${versions(sql, q)}) v`
  return row.n
}

function versions(sql: Sql, q: HistoryQuery) {
  const scope = (t: string) =>
    q.id !== undefined
      ? sql`${sql(t)}.rid = (select rid from resource where res_type = ${q.type as string} and id = ${q.id})`
      : q.type !== undefined
        ? sql`${sql(t)}.res_type = ${q.type}`
        : sql`true`
  const window = (t: string) => sql`
    ${sql(t)}.last_updated <= ${q.asOf}
    ${q.since ? sql`and ${sql(t)}.last_updated >= ${q.since}` : sql``}
    ${q.atEnd ? sql`and ${sql(t)}.last_updated < ${q.atEnd}` : sql``}`
  const union = sql`
    select rid, version, res_type, id, last_updated, deleted, content from resource c where ${scope('c')} and ${window('c')}
    union all
    select rid, version, res_type, id, last_updated, deleted, content from resource_history h where ${scope('h')} and ${window('h')}`
  if (!q.atStart) return union
  // Keep a version if it was still current at atStart: its successor (if any) came after atStart.
  return sql`
    select * from (
      select u.*, lead(u.last_updated) over (partition by u.rid order by u.version) as superseded_at
      from (${union}) u
    ) w where w.last_updated >= ${q.atStart} or w.superseded_at is null or w.superseded_at > ${q.atStart}`
}
