// Current resources read in keyset pages by rid, for work that goes through many of them (the $reindex
// job, the terminology rebuild): each page starts after the last rid of the one before, so a job can
// resume from a rid and never holds a cursor open.
import type { Sql } from '../../db/client'
import type { Fragment } from '../../db/fragments'

export interface CurrentRow {
  rid: string
  type: string
  version: number
  content: string
}

/** The current resources of these types (a condition on `resource r0`). */
export function ofTypes(sql: Sql, types: string[]): Fragment {
  return sql`r0.res_type = any(${types}::text[]) and not r0.deleted`
}

/** `where`: a condition on `resource r0` (a search's, or ofTypes); undefined for every current resource. */
export async function countCurrent(sql: Sql, where: Fragment | undefined): Promise<number> {
  const [{ n }] = await sql<{ n: string }[]>`select count(*)::bigint as n from resource r0 where ${where ?? sql`not r0.deleted`}`
  return Number(n)
}

/** The next `limit` resources `where` selects after rid `after`, in rid order. */
export function currentPage(sql: Sql, where: Fragment | undefined, after: string, limit: number): Promise<CurrentRow[]> {
  return sql<CurrentRow[]>`
    select r0.rid::text as rid, r0.res_type as type, r0.version, r0.content from resource r0
    where ${where ?? sql`not r0.deleted`} and r0.rid > ${after}::bigint order by r0.rid limit ${limit}`
}
