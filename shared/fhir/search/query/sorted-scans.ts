// The scan of a bounded page (bounded.ts) in the order of its sort, when every driver is common and one
// key an index holds in order sorts it: the scan walks that index, probes each resource, and stops at
// the page's end, instead of probing and sorting every resource of the type
// (Observation?status=final&_sort=-_lastUpdated and ?category=laboratory&_sort=date probed and sorted
// all 63,220 Observations on Synthea x10). Each scan returned is one branch of the page's union.
import type { Sql } from '../../../db/client'
import type { Fragment } from '../types'
import type { SearchQuery } from './query'
import { unionMembers } from '../registry'

export interface SortedScan {
  /** FROM, providing the resource row; `resource <row>` when absent. */
  from?: Fragment
  /** A condition beside the scan's own. */
  extra: Fragment
  /** The branch's order, the page's on these rows, in the index's order; the page's when absent. */
  order?: (reverse: boolean) => Fragment
}

export interface SortedScanContext {
  /** `_lastUpdated` sorts by the version current then (execute.ts). */
  asOf: string
  /** No cursor: a date sort's rows without a date (last) are read only when the dated ones fall short. */
  firstPage: boolean
  /** The WHERE of the resource row (every criterion). */
  where: Fragment
  /** The criteria that read only the rid, as a condition on a row with a `rid` named by the alias (given it). */
  onRid?: (alias: string) => Fragment
  /** Rows the page reads (count + 1 + offset). */
  limit: number
}

export function sortedScans(sql: Sql, q: SearchQuery, row: string, ctx: SortedScanContext): SortedScan[] | undefined {
  if (q.sort.length !== 1) return undefined
  const r = sql(row)
  const type = q.types[0]
  const { code, desc, def } = q.sort[0]
  const dir = (reverse: boolean) => (desc !== reverse ? sql`desc` : sql`asc`)
  if (code === '_id') return [{ extra: sql`true`, order: (reverse) => sql`${r}.id ${dir(reverse)}` }]
  if (code === '_lastUpdated')
    return [
      {
        extra: sql`${r}.last_updated <= ${ctx.asOf}::timestamptz`,
        // the page's order: the key, then rid ascending (descending when read backwards)
        order: (reverse) => sql`${r}.last_updated ${dir(reverse)}, ${r}.rid ${reverse ? sql`desc` : sql`asc`}`,
      },
      // the resources updated since: one range of (res_type, last_updated), each row then by rid
      {
        from: sql`(select x.rid from resource x where x.res_type = ${type} and x.last_updated > ${ctx.asOf}::timestamptz) c
          cross join lateral (select ${r}.* from resource ${r} where ${r}.rid = c.rid offset 0) ${r}`,
        extra: sql`true`,
      },
    ]
  if (def?.type !== 'date' || unionMembers(def) || !ctx.firstPage) return undefined
  // A resource sorts by its latest end descending, its earliest start ascending (params/date.ts
  // sortValue): its first row in that order stands for it (idx_date_sort, idx_date_lookup), the others
  // skipped; the resources without a row sort last, read in rid order only when the dated fall short.
  const d = sql('d0')
  const col = desc ? sql`hi` : sql`lo`
  const earlier = desc ? sql`x.hi > ${d}.hi` : sql`x.lo < ${d}.lo`
  const same = desc ? sql`x.hi = ${d}.hi` : sql`x.lo = ${d}.lo`
  // The criteria on the rid are checked on the date row before its resource is looked up: a common code
  // sorted by date (Observation?code=2085-9&_sort=-date, 2% of Observations) looked up every resource
  // it walked past. Inside the lateral, on the outer row only, they gate its lookup (a one-time filter
  // per date row); beside the walk's own conditions, a planner without statistics took them for a
  // filter leaving few rows, and sorted all 63,220 date rows instead of walking them in order.
  const early = ctx.onRid ? sql`${ctx.onRid('d0')} and` : sql``
  // The date row stands for its resource when no other of its rows comes first (checked in the lateral
  // too, after the criteria: a walked row of another code costs one probe, not two).
  const firstOfResource = sql`not exists (select 1 from idx_date x where x.rid = ${d}.rid and x.code = ${code} and (${earlier} or (${same} and x.ctid < ${d}.ctid)))`
  const dated = sql`idx_date ${d} cross join lateral (select ${r}.* from resource ${r} where ${early} ${firstOfResource} and ${r}.rid = ${d}.rid offset 0) ${r}`
  const first = sql`${d}.res_type = ${type} and ${d}.code = ${code}`
  const enough = sql`(select count(*) from (select 1 from ${dated} where ${first} and ${ctx.where} limit ${ctx.limit}) n) >= ${ctx.limit}`
  return [
    { from: dated, extra: first, order: () => sql`${d}.${col} ${desc ? sql`desc` : sql`asc`}, ${d}.rid asc` },
    { extra: sql`not exists (select 1 from idx_date x where x.rid = ${r}.rid and x.code = ${code} offset 0) and not ${enough}` },
  ]
}
