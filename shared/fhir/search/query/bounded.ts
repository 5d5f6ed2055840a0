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
import type { Sql } from '../../../db/client'
import { join } from '../../../db/fragments'
import {
  chainBranchTargets,
  compileCriteria,
  criterionRows,
  type DriverCriterion,
  driverCandidates,
  excludedRows,
  hasSources,
  hasSourceTargets,
  referenceDriver,
} from './compile'
import type { Fragment } from '../types'
import type { Criterion, SearchQuery } from './query'
import { negationCandidates } from './absent'
import { complementCount } from './complement-count'
import { ridOrderedRows } from './rid-ordered'
import { sortedScans } from './sorted-scans'
import { driverPick } from './driver-sample'

/** Rows of a driver counted before it is given up for a scan in rid order. */
export const DRIVE_BUDGET = 1000
/** Every driver common: the set is read when fewer than a page of this many pages' resources match. */
const WINDOW = 10
/** At most this many drivers are measured (the likeliest, compile.ts driverCandidates). */
const MAX_DRIVERS = 3

export interface BoundedPage {
  /** The statement's WITH list: each driver's rows (up to the budget) and their counts. */
  with: Fragment
  /** The WHERE of the resources (`r0`), every criterion a probe. */
  where: Fragment
  /** The number of matches (with `with`), when it can be counted without the resource rows. */
  count?: () => Fragment
  /** The branches: FROM, an extra condition (the one-time filter that picks it), and the order of its
   *  rows when an index gives it (else the page's). */
  branches: { from: Fragment; when: Fragment; order?: (reverse: boolean) => Fragment }[]
}

/**
 * The bounded shape of `q`'s page, or undefined when it does not apply (several types, no criterion
 * on index rows, or a reference beside other criteria, which compile.ts drives from already).
 * `ridBound` narrows the drivers' rows to the page's side of a cursor (rid order only).
 */
export function boundedPage(
  sql: Sql,
  q: SearchQuery,
  baseUrl: string,
  row: string,
  ridBound?: (col: Fragment) => Fragment,
  sorting?: { asOf: string; firstPage: boolean; reverse: boolean },
): BoundedPage | undefined {
  if (q.types.length !== 1) return undefined
  const type = q.types[0]
  // Each top-level chain branch's target ids, found once for the statement: probed in the drivers' counts,
  // the window, the pick and the page, a hashed set was read again in each (Patient.gender=male: about
  // 1,000 buffers each time).
  const targets = new Map<object, Fragment>()
  const chainCtes: Fragment[] = []
  for (const c of q.criteria)
    if (c.kind === 'chain')
      for (const b of c.branches) {
        const name = sql(`ct${chainCtes.length}`)
        chainCtes.push(sql`${name} as materialized (${chainBranchTargets(sql, b, 0, baseUrl)})`)
        targets.set(b, sql`${name}`)
      }
  const scope = { alias: row, type, depth: 0, probes: true, targets }
  if (referenceDriver(q.criteria, scope)) return undefined
  const drivers = driverCandidates(q.criteria).slice(0, MAX_DRIVERS)
  if (drivers.length === 0 && !q.criteria.some(onIndexRows)) return undefined
  const r = sql(row)
  // The resources' own conditions and every criterion but `skip` (a driver's candidates meet its own).
  const whereBut = (...skip: Criterion[]) =>
    sql`${r}.res_type = ${type} and not ${r}.deleted and ${compileCriteria(
      sql,
      q.criteria.filter((c) => !skip.includes(c)),
      scope,
      baseUrl,
    )}`
  const where = whereBut()
  const d = (n: number) => sql(`d${n}`)
  const size = (n: number) => sql`(select count(*) from ${d(n)})`
  // A _has counts its sources (a stream, stopped at the budget); driving, their targets are looked up.
  const ctes = drivers.map((c, n) =>
    c.kind === 'has'
      ? sql`${d(n)} as materialized (select x.rid from (${hasSources(sql, c, baseUrl)}) x limit ${DRIVE_BUDGET})`
      : sql`${d(n)} as materialized (select x.rid from (${criterionRows(sql, c, type, baseUrl, targets)}) x ${ridBound ? sql`where ${ridBound(sql`x.rid`)}` : sql``} limit ${DRIVE_BUDGET})`,
  )
  const candidates = (c: DriverCriterion, n: number) =>
    c.kind === 'has'
      ? sql`(select distinct t.rid from (select distinct x.target_id from (${hasSourceTargets(sql, c, type, sql`(select distinct rid from ${d(n)}) s`)}) x) ids
          cross join lateral (select t.rid from resource t where t.res_type = ${type} and t.id = ids.target_id and not t.deleted offset 0) t) c`
      : sql`(select distinct rid from ${d(n)}) c`
  const sizes = drivers.map((_, n) => sql`${size(n)} as ${sql(`n${n}`)}`)
  const n = (k: number) => sql`s.${sql(`n${k}`)}`
  // Driver k runs when it is under the budget and the fewest (ties to the likeliest).
  const fewest = (k: number) => drivers.map((__, m) => (m === k ? sql`true` : m < k ? sql`${n(k)} < ${n(m)}` : sql`${n(k)} <= ${n(m)}`))
  // In rid order (no sort key), the candidates' rids are sorted before each is looked up, so the
  // lookups stop at the page: a driver under the budget looked up all its rows first (870 Observations
  // for a page of 20, code=789-8 beside a chain), and a sparse answer's common driver all of its own
  // (subject:Patient.gender=male, its window one woman's Observations: 30,000, 107,000 buffers).
  const ordered = q.sort.length === 0 && sorting ? sql`order by c.rid ${sorting.reverse ? sql`desc` : sql`asc`}` : sql``
  // c.rid is r0.rid: ordered by it, the page needs no sort (the lateral fence hides the equality)
  const byCandidate = q.sort.length === 0 ? (reverse: boolean) => sql`c.rid ${reverse ? sql`desc` : sql`asc`}` : undefined
  // The candidates `c` (a relation of rids) in that order, each checked for the criteria (but `skip`) that
  // read only its rid before its resource is looked up for the rest: a candidate that fails them costs no
  // lookup (OFFSET 0 keeps the check after the sort, one candidate at a time until the page is full).
  const lookedUp = (candidates: Fragment, skip: Criterion[]) => {
    const early = q.criteria.filter((c) => ridOnly(c) && !skip.includes(c))
    return sql`(select c.rid from (select c.rid from ${candidates} ${ordered} offset 0) c
        where ${compileCriteria(sql, early, { ...scope, alias: 'c' }, baseUrl)}) c cross join lateral (
        select ${r}.rid, ${r}.res_type, ${r}.id, ${r}.content, ${r}.last_updated from resource ${r}
        where ${r}.rid = c.rid and ${whereBut(...skip, ...early)} offset 0) ${r}`
  }
  const branches = drivers.map((driver, k) => {
    return {
      from: lookedUp(candidates(driver, k), [driver]),
      when: sql`(select ${n(k)} < ${DRIVE_BUDGET} and ${join(sql, fewest(k), sql` and `)} from sizes s)`,
      order: byCandidate,
    }
  })
  // No driver (`:missing`, `:not`, `_filter`...): the scan alone; the plain statement's plan for them
  // depends on statistics (Observation?encounter:missing=false hashed every encounter reference first).
  const common =
    drivers.length === 0
      ? sql`true`
      : join(
          sql,
          drivers.map((_, m) => sql`${n(m)} >= ${DRIVE_BUDGET}`),
          sql` and `,
        )
  // Every driver common, the matches may still be few (`status:not=final`, `encounter:missing=true`,
  // `category=laboratory&code=8302-2`): the scan would probe every resource of the type (63,220
  // Observations for an empty answer). The first WINDOW pages of resources (from the cursor, in rid
  // order) tell: when fewer than a page of them match, the page is read from one driver's rids in rid
  // order, each resource probed for the other criteria (a negation too) until the page is full: the
  // driver whose first rows match the rest most often (driver-sample.ts). Linear in that driver's rows
  // whatever the plan; the drivers' rids INTERSECTed read every row of each (date=gt2012&code=72514-3:
  // 48,030 rows for 4,120). When no driver's sample matches enough, or there is no driver, the set: the
  // drivers' rids INTERSECTed, EXCEPT a negation's (or the type's rids EXCEPT them).
  // With no driver, a negation's candidates (absent.ts: through the shapes of the type, as few as its
  // matches when they are few) are the set, the negation still probed on each: the type's rids EXCEPT
  // the parameter's rows read all 63,220 Observations of Synthea x10 for `status:not=final` (400-560 ms).
  const typeRids = sql`select x.rid from resource x where x.res_type = ${type} and not x.deleted`
  const exceptExcluded = (c: Criterion) => {
    const rows = excludedRows(sql, c, type, baseUrl)
    return rows ? sql`(${typeRids}) except (${rows})` : typeRids
  }
  const absent =
    drivers.length === 0
      ? q.criteria
          .map((c) => ({ c, rows: negationCandidates(sql, c, type, exceptExcluded(c)) }))
          .find((x): x is { c: Criterion; rows: Fragment } => x.rows !== undefined)
      : undefined
  const negation = absent
    ? undefined
    : q.criteria.map((c) => ({ c, rows: excludedRows(sql, c, type, baseUrl) })).find((x): x is { c: Criterion; rows: Fragment } => x.rows !== undefined)
  const limit = q.count + 1 + (q.offset ?? 0)
  const bound = (col: Fragment) => (ridBound ? sql`and ${ridBound(col)}` : sql``)
  // The criteria every rid of the set meets (not probed again), and those it is drawn from.
  const inSet = [...drivers, ...(negation ? [negation.c] : [])]
  const setFrom = absent ? [absent.c, ...inSet] : inSet
  const set = (cursor: boolean) => {
    if (absent) return sql`select distinct s.rid from (${absent.rows}) s where true ${cursor ? bound(sql`s.rid`) : sql``}`
    const rows = drivers.map((c) => sql`(${criterionRows(sql, c, type, baseUrl, targets)})`)
    if (rows.length === 0) rows.push(sql`(${typeRids})`)
    return sql`select s.rid from (${join(sql, rows, sql` intersect `)} ${negation ? sql`except (${negation.rows})` : sql``}) s
      where true ${cursor ? bound(sql`s.rid`) : sql``}`
  }
  // One common criterion alone matches all its rows: dense, no window needed (it cost the plain
  // common-value searches a tenth to a half more).
  const alone = q.criteria.length === 1 && drivers.length === 1 && !negation
  const sparseFrom = (candidates: Fragment, skip: Criterion[]) => lookedUp(sql`(${candidates}) c`, skip)
  const sparseWhen = sql`(select ${common} from sizes s) and (select w.n < ${limit} from win w)`
  const picked = (k: number) => (drivers.length > 1 ? sql`${sparseWhen} and (select p.k = ${k}::int from pick p)` : sparseWhen)
  const sparse =
    setFrom.length === 0 || alone
      ? []
      : [
          ...drivers.map((driver, k) => ({
            from: sparseFrom(
              sql`select distinct x.rid from (${ridOrderedRows(sql, driver, type, baseUrl) ?? criterionRows(sql, driver, type, baseUrl, targets)}) x where true ${bound(sql`x.rid`)}`,
              [driver],
            ),
            when: picked(k),
            order: byCandidate,
          })),
          ...(drivers.length === 1 ? [] : [{ from: sparseFrom(set(true), inSet), when: picked(-1), order: byCandidate }]),
        ]
  const scanWhen = sql`${where} and (select ${common} from sizes s) ${sparse.length > 0 ? sql`and (select w.n >= ${limit} from win w)` : sql``}`
  // The criteria that read only the resource's rid, on another row's rid (sorted-scans.ts checks them on the date rows).
  const onRid = (alias: string) => compileCriteria(sql, q.criteria.filter(ridOnly), { alias, type, depth: 0, probes: true, targets }, baseUrl)
  const scans = (sorting ? sortedScans(sql, q, row, { asOf: sorting.asOf, firstPage: sorting.firstPage, where, limit, onRid }) : undefined) ?? [
    { extra: sql`true` },
  ]
  const scan = scans.map((x) => ({ from: x.from ?? sql`resource ${r}`, when: sql`${scanWhen} and ${x.extra}`, order: x.order }))
  // Whether the live resource of the type whose rid is `alias.rid` (of the type's index rows, or of the
  // window) meets every criterion but `skip`. When every criterion reads only the rid, they are probed on
  // it and the resource row is not looked up: the window's 210 and the samples' 200 lookups were 1,200 of
  // the 10,200 buffers of Observation?patient:Patient.gender=male&code=29463-7 (Synthea x10).
  const matchOf = (alias: string, skip: Criterion[]) =>
    q.criteria.every(ridOnly)
      ? compileCriteria(
          sql,
          q.criteria.filter((c) => !skip.includes(c)),
          { ...scope, alias },
          baseUrl,
        )
      : sql`exists (select 1 from resource ${r} where ${r}.rid = ${sql(alias)}.rid and ${whereBut(...skip)} offset 0)`
  // Evaluated only when every driver is common (an InitPlan runs when its value is first needed).
  // The window's rids are found one index descent each (the next rid of the type after the last): as
  // `order by rid limit`, a generic plan after ANALYZE read every Observation through a parallel
  // bitmap scan and sorted them (63,220 rows, 340 ms) for the first 210. A recursive CTE: the statement
  // is `with recursive` (execute.ts).
  const next = (after: Fragment | undefined) =>
    sql`(select min(x.rid) from resource x where x.res_type = ${type} and not x.deleted ${after ? sql`and x.rid > ${after}` : sql``} ${bound(sql`x.rid`)})`
  const firstRids = sql`win_rids (rid, k) as (select ${next(undefined)}, 1
      union all select ${next(sql`w.rid`)}, w.k + 1 from win_rids w where w.rid is not null and w.k < ${WINDOW * limit}::int)`
  const win = sql`${firstRids}, win as materialized (select count(*) as n from (select 1 from win_rids x
      where x.rid is not null and ${matchOf('x', [])} limit ${limit}) w)`
  // Counting reads no resource row when every criterion is on index rows: the fewest driver's rids
  // (all of them), or the set when all are common, each other criterion probed on the rid
  // (Observation?status=final&_total=accurate probed all 63,220 resource rows).
  // Index rows are those of live resources only (a deleted version gets none, index-store.ts): each
  // rid once is all it takes. Taking the deleted resources' rids out as a set (EXCEPT) cost more than
  // the scan (Observation?status=final: 31 against 18 ms for 63,220 rids).
  const probed = (skip: Criterion[]) =>
    compileCriteria(
      sql,
      q.criteria.filter((c) => !skip.includes(c)),
      scope,
      baseUrl,
    )
  const counted =
    setFrom.length > 0 && q.criteria.every(ridOnly)
      ? () =>
          join(
            sql,
            [
              ...drivers.map(
                (driver, k) => sql`(select count(*) from (select distinct x.rid from (${criterionRows(sql, driver, type, baseUrl, targets)}) x) ${r}
                  where (select ${n(k)} < ${DRIVE_BUDGET} and ${join(sql, fewest(k), sql` and `)} from sizes s) and ${probed([driver])})`,
              ),
              sql`(select count(*) from (${set(false)}) ${r} where (select ${common} from sizes s) and ${probed(inSet)})`,
            ],
            sql` + `,
          )
      : undefined
  // A common value alone is counted from the few resources without it when they are few (complement-count.ts).
  const byComplement = alone && counted ? complementCount(sql, q.criteria[0], type) : undefined
  const count =
    byComplement && counted ? () => sql`coalesce((select case when s.n0 >= ${DRIVE_BUDGET} then ${byComplement} end from sizes s), ${counted()})` : counted
  // Several drivers may read a sparse answer: the one whose first rows match the rest most often (a _has
  // counts its sources, not the type's rids: never sampled).
  const sampled = (k: number) => (drivers[k].kind === 'has' ? undefined : sql`${d(k)}`)
  const pick = sparse.length > 1 ? [driverPick(sql, drivers.length, DRIVE_BUDGET, sampled, (k) => matchOf('s', [drivers[k]]))] : []
  return {
    count,
    with: sql`${join(sql, [...chainCtes, ...ctes, sql`sizes as materialized (select ${join(sql, [...sizes, sql`0 as none`], sql`, `)})`, ...(sparse.length > 0 ? [win] : []), ...pick], sql`, `)}`,
    where,
    branches: [...branches, ...scan, ...sparse],
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

// A criterion on the resource's index rows, not its own columns (`_id`, `_lastUpdated`) nor a compartment
// (one range of the reference lookup, which the plain statement reads first).
function onIndexRows(c: Criterion): boolean {
  if (c.kind === 'compartment') return false
  if (c.kind === 'param') return c.def.common !== 'column' && c.def.code !== '_id' && c.def.code !== '_lastUpdated'
  if (c.kind === 'missing') return c.def.common !== 'column'
  return true
}

// A criterion that reads no column of the resource row but its rid (`_has` reads its id).
function ridOnly(c: Criterion): boolean {
  switch (c.kind) {
    case 'has':
      return false
    case 'or':
      return c.any.every(ridOnly)
    case 'and':
      return c.all.every(ridOnly)
    case 'not':
      return ridOnly(c.inner)
    case 'param':
    case 'missing':
      return onIndexRows(c)
    default:
      return true
  }
}
