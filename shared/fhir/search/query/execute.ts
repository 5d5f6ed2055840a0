// Runs a SearchQuery: one page of matches in keyset order (a cursor names the row a page starts
// after or ends before, so any node can serve any page and pages neither repeat nor skip while writes
// arrive), the total when asked or known, and the page's _include/_revinclude resources.
import type { Sql } from '../../../db/client'
import { type StoredVersion, storedFromRow } from '../../repo/types'
import { join } from '../../../db/fragments'
import { compileMatch } from './compile'
import { codeMatch } from './param-sql'
import { handlerFor } from '../types'
import type { Fragment } from '../types'
import type { SearchQuery, SortSpec } from './query'
import { loadIncludes } from './include'
import { type SearchMatch, toMatch } from './match'
import { type BoundedPage, boundedPage, drivenFrom } from './bounded'
import { orderedScan } from './ordered-scan'
import { prepareTerminologyCriteria } from './terminology-criteria'

export interface Cursor {
  /** Sort-key values of the row, then its rid. */
  keys: (string | null)[]
  rid: string
  /** 'after': the page starts after this row; 'before': it ends before it. */
  dir: 'after' | 'before'
  /** When the first page was read: `_lastUpdated` sorts by the version current then, so a resource
   *  updated while the client pages does not jump to a page already read. */
  asOf?: string
}

export interface SearchPage {
  matches: SearchMatch[]
  included: SearchMatch[]
  /** Cursors of the first and last rows, for previous/next links; undefined when there is no such page. */
  next?: Cursor
  previous?: Cursor
  total?: number
  /** `_include`/`_revinclude` found more than the page may carry (include.ts). */
  includesCut?: { limit: number }
}

const ROW = 'r0'

/** `canBound`: the page may take the bounded shape (bounded.ts); without it, the plain statement. */
export async function runSearch(sql: Sql, q: SearchQuery, baseUrl: string, cursor?: Cursor, canBound = true): Promise<SearchPage> {
  await prepareTerminologyCriteria(sql, q.criteria)
  // The plain statement's condition, made only for it (a bounded page has its own: made anyway, it cost
  // a bounded search a sixth more fragments).
  const where = () => whereOf(sql, q, baseUrl)
  if (q.summaryCount) return { matches: [], included: [], total: await countOf(sql, where, canBound ? boundedPage(sql, q, baseUrl, ROW) : undefined) }
  const asOf = cursor?.asOf ?? new Date().toISOString()
  const keys = sortKeys(sql, q.sort, asOf)
  const reverse = cursor?.dir === 'before'
  // Sorted by a date every match has: read the date index in order and stop at the page's end.
  const scan = orderedScan(sql, q)
  if (scan) keys[0] = { expr: scan.key, desc: scan.desc }
  const terms = keys.map((k, n) => (n === 0 && scan ? scan.order(reverse) : orderTerm(sql, k, reverse)))
  const order = join(sql, [...terms, reverse ? sql`${sql(ROW)}.rid desc` : sql`${sql(ROW)}.rid asc`], sql`, `)
  const keyCols =
    keys.length > 0
      ? sql`, ${join(
          sql,
          keys.map((k, n) => sql`${k.expr} as ${sql(`k${n}`)}`),
          sql`, `,
        )}`
      : sql``
  const r = sql(ROW)
  const after = cursor ? sql`and ${cursorCondition(sql, keys, cursor)}` : sql``
  // In rid order a cursor also bounds the drivers' rows (bounded.ts).
  const ridBound =
    keys.length === 0 && cursor
      ? (col: Fragment) => (cursor.dir === 'before' ? sql`${col} < ${cursor.rid}::bigint` : sql`${col} > ${cursor.rid}::bigint`)
      : undefined
  const shape = scan || !canBound ? undefined : boundedPage(sql, q, baseUrl, ROW, ridBound, { asOf, firstPage: !cursor, reverse })
  const rows = shape
    ? await sql<any[]>`
    with recursive ${shape.with}
    select * from (${join(
      sql,
      shape.branches.map(
        (b) => sql`(select ${r}.rid::text, ${r}.res_type, ${r}.id, ${r}.content ${keyCols}, ${r}.rid as rid_order
          from ${b.from} where ${b.when} ${after} order by ${b.order ? b.order(reverse) : order} limit ${q.count + 1 + (q.offset ?? 0)})`,
      ),
      sql` union all `,
    )}) page
    order by ${join(
      sql,
      [
        ...keys.map((k, n) => orderTerm(sql, { expr: sql`page.${sql(`k${n}`)}`, desc: k.desc }, reverse)),
        reverse ? sql`page.rid_order desc` : sql`page.rid_order asc`,
      ],
      sql`, `,
    )}
    limit ${q.count + 1} ${q.offset ? sql`offset ${q.offset}` : sql``}`
    : await sql<any[]>`
    select ${r}.rid::text, ${r}.res_type, ${r}.id, ${r}.content
      ${keyCols}
    from ${scan ? scan.from(ROW, whereOf(sql, q, baseUrl, true)) : sql`resource ${r}`}
    where ${scan ? scan.where : where()} ${after}
      ${scan && cursor?.keys[0] ? sql`and ${scan.bound(cursor.keys[0], reverse)}` : sql``}
    order by ${order}
    limit ${q.count + 1} ${q.offset ? sql`offset ${q.offset}` : sql``}`
  const more = rows.length > q.count
  const page = rows.slice(0, q.count)
  if (reverse) page.reverse()
  const matches = page.map(toMatch)
  const cursorOf = (row: any, dir: Cursor['dir']): Cursor => ({ keys: keys.map((_, n) => keyText(row[`k${n}`])), rid: row.rid, dir, asOf })
  const result: SearchPage = { matches, included: [] }
  if (page.length > 0) {
    // Forward: a next page exists when we read more than a page; a previous one when we started after a row.
    // Backward: mirrored.
    const hasNext = reverse ? true : more
    const hasPrev = reverse ? more : cursor !== undefined
    if (hasNext) result.next = cursorOf(page[page.length - 1], 'after')
    if (hasPrev) result.previous = cursorOf(page[0], 'before')
  }
  if (q.total === 'accurate') result.total = await countOf(sql, where, canBound ? boundedPage(sql, q, baseUrl, ROW) : undefined)
  else if (q.total === 'estimate') result.total = await estimateOf(sql, where())
  else if (q.total !== 'none' && !cursor && !q.offset && !more) result.total = matches.length
  const included = await loadIncludes(sql, q, matches)
  result.included = included.matches
  if (included.cut) result.includesCut = included.cut
  return result
}

/** Rids of the resources matching the criteria, at most `limit` (conditional operations). */
export async function matchIds(sql: Sql, q: SearchQuery, baseUrl: string, limit: number): Promise<StoredVersion[]> {
  await prepareTerminologyCriteria(sql, q.criteria)
  // From the likeliest criterion's rows when one can drive: the planner's choice depends on statistics.
  const driven = drivenFrom(sql, q, baseUrl, ROW)
  const rows = await sql<any[]>`
    select ${sql(ROW)}.rid::text, ${sql(ROW)}.res_type, ${sql(ROW)}.id, ${sql(ROW)}.version, ${sql(ROW)}.last_updated, ${sql(ROW)}.deleted, ${sql(ROW)}.content
    from ${driven ?? sql`resource ${sql(ROW)} where ${whereOf(sql, q, baseUrl)}`} order by ${sql(ROW)}.rid limit ${limit}`
  return rows.map(storedFromRow)
}

/** The WHERE of a search over `resource r0`: its types, not deleted, and every criterion. */
export function searchWhere(sql: Sql, q: SearchQuery, baseUrl: string): Fragment {
  return whereOf(sql, q, baseUrl)
}

// `probes`: every criterion checked on the one row at hand (ordered-scan.ts looks each resource up in
// date order: a criterion joined there instead could read all its rows again for every date row).
function whereOf(sql: Sql, q: SearchQuery, baseUrl: string, probes = false): Fragment {
  const r = sql(ROW)
  const types = q.types.length === 1 ? sql`${r}.res_type = ${q.types[0]}` : q.types.length > 1 ? sql`${r}.res_type = any(${q.types}::text[])` : sql`true`
  const scope = { alias: ROW, type: q.types.length === 1 ? q.types[0] : undefined, depth: 0, probes }
  return sql`${types} and not ${r}.deleted and ${compileMatch(sql, q.criteria, scope, baseUrl)}`
}

async function countOf(sql: Sql, where: () => Fragment, bounded?: BoundedPage): Promise<number> {
  if (bounded?.count) {
    const [row] = await sql<{ n: number }[]>`with recursive ${bounded.with} select (${bounded.count()})::int as n`
    return row.n
  }
  if (bounded) {
    const counts = bounded.branches.map((b) => sql`(select count(*) from ${b.from} where ${b.when})`)
    const [row] = await sql<{ n: number }[]>`with recursive ${bounded.with} select (${join(sql, counts, sql` + `)})::int as n`
    return row.n
  }
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from resource ${sql(ROW)} where ${where()}`
  return row.n
}

// The planner's row estimate: what `_total=estimate` asks for, without counting.
async function estimateOf(sql: Sql, where: Fragment): Promise<number> {
  const [row] = await sql<any[]>`explain (format json) select 1 from resource ${sql(ROW)} where ${where}`
  const plan = row['QUERY PLAN'] ?? Object.values(row)[0]
  return Math.round((typeof plan === 'string' ? JSON.parse(plan) : plan)[0].Plan['Plan Rows'])
}

interface SortKey {
  expr: Fragment
  desc: boolean
}

function sortKeys(sql: Sql, sort: SortSpec[], asOf: string): SortKey[] {
  const r = sql(ROW)
  return sort.flatMap((s) => {
    if (s.code === '_id') return { expr: sql`${r}.id`, desc: s.desc }
    if (s.code === '_lastUpdated') {
      const expr = sql`(case when ${r}.last_updated <= ${asOf}::timestamptz then ${r}.last_updated
        else (select max(h.last_updated) from resource_history h where h.rid = ${r}.rid and h.last_updated <= ${asOf}::timestamptz) end)`
      return { expr, desc: s.desc }
    }
    const h = handlerFor(s.def!.type)
    if (!h?.sortValue) return { expr: sql`null::text`, desc: s.desc }
    const values = [h.sortValue(sql, s.desc)].flat()
    return values.map((v) => ({ expr: sql`(select ${v} from ${sql(h.table)} i where i.rid = ${r}.rid and ${codeMatch(sql, s.def!)})`, desc: s.desc }))
  })
}

// Forward order puts nulls last in both directions; reading backwards mirrors it.
function orderTerm(sql: Sql, k: SortKey, reverse: boolean): Fragment {
  const desc = k.desc !== reverse
  const nullsFirst = reverse
  return sql`${k.expr} ${desc ? sql`desc` : sql`asc`} ${nullsFirst ? sql`nulls first` : sql`nulls last`}`
}

// Rows strictly after (or before) the cursor row in the order (k1, k2, ..., rid).
function cursorCondition(sql: Sql, keys: SortKey[], c: Cursor): Fragment {
  const before = c.dir === 'before'
  let cond = before ? sql`${sql(ROW)}.rid < ${c.rid}::bigint` : sql`${sql(ROW)}.rid > ${c.rid}::bigint`
  for (let n = keys.length - 1; n >= 0; n--) {
    const { expr, desc } = keys[n]
    const v = c.keys[n]
    // After (forward): larger for asc, smaller for desc, and nulls (last). Before: the mirror, no nulls.
    const beyond =
      v === null
        ? before
          ? sql`${expr} is not null`
          : sql`false`
        : before
          ? desc
            ? sql`${expr} > ${v}`
            : sql`${expr} < ${v}`
          : desc
            ? sql`(${expr} < ${v} or ${expr} is null)`
            : sql`(${expr} > ${v} or ${expr} is null)`
    const same = v === null ? sql`${expr} is null` : sql`${expr} = ${v}`
    cond = sql`(${beyond} or (${same} and ${cond}))`
  }
  return cond
}

function keyText(v: unknown): string | null {
  if (v === null || v === undefined) return null
  return v instanceof Date ? v.toISOString() : String(v)
}
