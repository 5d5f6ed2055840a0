// A search sorted by a date parameter reads that parameter's index rows in index order
// (idx_date_sort, migration 0012) and stops at the page's end, instead of finding every match and
// sorting them all. Only when a criterion on the same parameter guarantees each match has a date
// row: resources without one sort last, and this order never reaches them.
import type { Sql } from '../../../db/client'
import type { Fragment } from '../types'
import type { SearchQuery } from './query'
import { unionMembers } from '../registry'

/** The date rows driving the scan are aliased `d0`; the resource row keeps its usual alias. */
const DRIVER = 'd0'

export interface OrderedScan {
  /** The first sort key, read from the driving row (never null). */
  key: Fragment
  desc: boolean
  /** FROM: the driving rows in order, each joined to its resource `row` when that resource matches `where`. */
  from(row: string, where: Fragment): Fragment
  /** The driving rows' own conditions: their type and code, one row per resource. */
  where: Fragment
  /** ORDER BY term of the key in the index's order (or its mirror when reading backwards). */
  order(reverse: boolean): Fragment
  /** A page starting after (or ending before) a row whose key is `value`: the index range left to read. */
  bound(value: string, reverse: boolean): Fragment
}

export function orderedScan(sql: Sql, q: SearchQuery): OrderedScan | undefined {
  const first = q.sort[0]
  // one code's rows in index order (a union parameter's rows are its members': not one range)
  if (q.types.length !== 1 || first?.def?.type !== 'date' || unionMembers(first.def)) return undefined
  const code = first.code
  const guaranteed = q.criteria.some(
    (c) => (c.kind === 'param' && c.def.code === code && c.modifier === undefined) || (c.kind === 'missing' && c.def.code === code && !c.missing),
  )
  if (!guaranteed) return undefined
  const d = sql(DRIVER)
  // A resource sorts by max(hi) descending, min(lo) ascending (types/date.ts sortValue): its first row in
  // that order stands for it; the others (and exact ties, by ctid) are skipped.
  const col = first.desc ? sql`hi` : sql`lo`
  const earlier = first.desc ? sql`x.hi > ${d}.hi` : sql`x.lo < ${d}.lo`
  const same = first.desc ? sql`x.hi = ${d}.hi` : sql`x.lo = ${d}.lo`
  return {
    key: sql`${d}.${col}`,
    desc: first.desc,
    // A lateral subquery kept apart (offset 0): the planner can only walk the driving rows and look each
    // resource up, so its row estimates (often far off for token values) cannot turn this back into
    // "find every match, then sort".
    from: (row, where) => {
      const r = sql(row)
      return sql`idx_date ${d} cross join lateral (
        select ${r}.rid, ${r}.res_type, ${r}.id, ${r}.content, ${r}.last_updated from resource ${r}
        where ${r}.rid = ${d}.rid and ${where} offset 0) ${r}`
    },
    where: sql`${d}.res_type = ${q.types[0]} and ${d}.code = ${code}
      and not exists (select 1 from idx_date x where x.rid = ${d}.rid and x.code = ${code} and (${earlier} or (${same} and x.ctid < ${d}.ctid)))`,
    // No NULLS clause: the column is never null, and the index's default null order lets it serve the scan.
    order: (reverse) => (first.desc !== reverse ? sql`${d}.${col} desc` : sql`${d}.${col} asc`),
    bound: (value, reverse) => (first.desc !== reverse ? sql`${d}.${col} <= ${value}::timestamptz` : sql`${d}.${col} >= ${value}::timestamptz`),
  }
}
