// The page of a one-type search, in a shape whose cost stays linear in what it reads whatever the
// planner knows (no statistics after a bulk load, a generic plan that guesses one row everywhere):
// the statement measures, up to a budget, how many index rows each candidate driver matches (Blaze's
// estimated scan size, counted rather than guessed), then runs one of its branches:
//   - a driver with fewer than DRIVE_BUDGET rows: its resources are looked up one by one and every
//     other criterion is probed on them (at most DRIVE_BUDGET lookups, then a sort of those rows);
//   - every driver has DRIVE_BUDGET rows or more (common values: `status=final`, `category=laboratory`,
//     `:not`, `:missing`): the resources of the type are read in rid order, each probed, until the
//     page is full (with the keyset order by rid; another sort reads them all, once each).
// The unused branches are cut by one-time filters and never run. Every criterion is a probe of one
// row (compile.ts, Scope.probes), so no join can be turned into a nested loop over two whole sets.
import type { Sql } from '../../db/client'
import { join } from '../../db/fragments'
import { compileCriteria, criterionRows, driverCandidates, referenceDriver } from './compile'
import type { Fragment } from './types/param-type'
import type { SearchQuery } from './query'

/** Rows of a driver counted before it is given up for a scan in rid order. */
export const DRIVE_BUDGET = 1000
/** At most this many drivers are measured (the likeliest, compile.ts driverCandidates). */
const MAX_DRIVERS = 3

export interface BoundedPage {
  /** The statement's WITH list: each driver's rows (up to the budget) and their counts. */
  with: Fragment
  /** The WHERE of the resources (`r0`), every criterion a probe. */
  where: Fragment
  /** The branches: FROM and an extra condition (the one-time filter that picks it). */
  branches: { from: Fragment; when: Fragment }[]
}

/**
 * The bounded shape of `q`'s page, or undefined when it does not apply (several types, no criterion
 * on index rows, or a reference beside other criteria, which compile.ts drives from already).
 * `ridBound` narrows the drivers' rows to the page's side of a cursor (rid order only).
 */
export function boundedPage(sql: Sql, q: SearchQuery, baseUrl: string, row: string, ridBound?: (col: Fragment) => Fragment): BoundedPage | undefined {
  if (q.types.length !== 1) return undefined
  const type = q.types[0]
  const scope = { alias: row, type, depth: 0, probes: true }
  if (referenceDriver(q.criteria, scope)) return undefined
  const drivers = driverCandidates(q.criteria).slice(0, MAX_DRIVERS)
  if (drivers.length === 0) return undefined
  const r = sql(row)
  // The resources' own conditions and every criterion but `skip` (a driver's candidates meet its own).
  const whereBut = (skip?: unknown) =>
    sql`${r}.res_type = ${type} and not ${r}.deleted and ${compileCriteria(
      sql,
      q.criteria.filter((c) => c !== skip),
      scope,
      baseUrl,
    )}`
  const where = whereBut()
  const d = (n: number) => sql(`d${n}`)
  const size = (n: number) => sql`(select count(*) from ${d(n)})`
  const ctes = drivers.map(
    (c, n) =>
      sql`${d(n)} as materialized (select x.rid from (${criterionRows(sql, c, type, baseUrl)}) x ${ridBound ? sql`where ${ridBound(sql`x.rid`)}` : sql``} limit ${DRIVE_BUDGET})`,
  )
  const sizes = drivers.map((_, n) => sql`${size(n)} as ${sql(`n${n}`)}`)
  const n = (k: number) => sql`s.${sql(`n${k}`)}`
  // Driver k runs when it is under the budget and the fewest (ties to the likeliest).
  const branches = drivers.map((driver, k) => {
    const fewest = drivers.map((__, m) => (m === k ? sql`true` : m < k ? sql`${n(k)} < ${n(m)}` : sql`${n(k)} <= ${n(m)}`))
    return {
      from: sql`(select distinct rid from ${d(k)}) c cross join lateral (
        select ${r}.rid, ${r}.res_type, ${r}.id, ${r}.content, ${r}.last_updated from resource ${r}
        where ${r}.rid = c.rid and ${whereBut(driver)} offset 0) ${r}`,
      when: sql`(select ${n(k)} < ${DRIVE_BUDGET} and ${join(sql, fewest, sql` and `)} from sizes s)`,
    }
  })
  const scan = {
    from: sql`resource ${r}`,
    when: sql`${where} and (select ${join(
      sql,
      drivers.map((_, m) => sql`${n(m)} >= ${DRIVE_BUDGET}`),
      sql` and `,
    )} from sizes s)`,
  }
  return {
    with: sql`${join(sql, ctes, sql`, `)}, sizes as materialized (select ${join(sql, sizes, sql`, `)})`,
    where,
    branches: [...branches, scan],
  }
}

/**
 * The matches of a one-type `q` read from its likeliest criterion's index rows (compile.ts
 * driverCandidates), each resource then looked up by rid and every other criterion probed on it:
 * FROM for `resource <row>`, or undefined when no criterion can drive. For the conditional operations'
 * match (execute.ts matchIds, `order by rid limit 2`): with no statistics (a fresh database during a
 * load) the planner guessed two Organizations, read all of them in rid order and joined the identifier
 * rows (420 resource rows for one match, tests/conditional-plans.test.ts). Linear in the driver's rows.
 */
export function drivenFrom(sql: Sql, q: SearchQuery, baseUrl: string, row: string): Fragment | undefined {
  if (q.types.length !== 1) return undefined
  const type = q.types[0]
  const [driver] = driverCandidates(q.criteria)
  if (driver === undefined) return undefined
  const r = sql(row)
  const scope = { alias: row, type, depth: 0, probes: true }
  const others = compileCriteria(
    sql,
    q.criteria.filter((c) => c !== driver),
    scope,
    baseUrl,
  )
  return sql`(select distinct x.rid from (${criterionRows(sql, driver, type, baseUrl)}) x) c cross join lateral (
    select ${r}.* from resource ${r} where ${r}.rid = c.rid and ${r}.res_type = ${type} and not ${r}.deleted and ${others} offset 0) ${r}`
}
