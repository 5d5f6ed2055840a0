// One search parameter's criterion as SQL over a resource row's index rows: the index table and the
// predicate its rows must meet (the parameter type's unit says what a value means), `_id` and
// `_lastUpdated` on the resource row itself, and the two shapes that keep a per-row check a probe.
// compile.ts composes these into whole criteria (chains, _has, missing, _filter, _text).
import type postgres from 'postgres'
import { AppError, invalid } from '../../../errors'
import type { Sql } from '../../../db/client'
import { join } from '../../../db/fragments'
import { handlerFor } from '../types'
import type { Fragment, PredicateContext } from '../types'
import { unescape } from '../escape'
import { datePredicate } from '../types/date'
import { type SearchParamDef, storedCodes } from '../registry'

export interface Scope {
  /** SQL alias of the resource row the predicate is about (r0, r1...). */
  alias: string
  /** Its resource type when known (one-type search); undefined for a system search over several. */
  type?: string
  depth: number
  /**
   * Every criterion on the row's own index rows is a probe of that row (a subplan kept apart by
   * OFFSET 0), never a join the planner may turn around: the rows to check are chosen by the caller
   * (bounded.ts drives from the criterion with the fewest rows, or scans in rid order up to the page).
   */
  probes?: boolean
  /** A chain branch's target ids already found once for the statement (a WITH entry's name), by branch. */
  targets?: ReadonlyMap<object, Fragment>
}

// Keeps an EXISTS a subplan probed per row: PostgreSQL does not pull a subquery with OFFSET up into a
// join. For NOT EXISTS always: as an anti join, a generic plan that guessed one row for the index side
// ran a nested loop over every pair (Observation?status:not=final read 921 million rows, issue 23).
export const probe = (sql: Sql, on: boolean | undefined): Fragment => (on ? sql`offset 0` : sql``)

// An `x in (subquery)` checked per row whose subquery does not depend on the row: as a probe it must be
// found once and hashed (a hashed SubPlan), which PostgreSQL does when the IN is not a plain AND-ed
// condition it would pull up into a join (and then, in a per-row probe, run again for every row: a
// chain `patient:Patient.gender=male` re-read every male patient for each Observation). `is true` keeps
// it an expression; it means the same in a WHERE (unknown is not true either way).
export const once = (sql: Sql, inSubquery: Fragment, on: boolean | undefined): Fragment => (on ? sql`(${inSubquery}) is true` : inSubquery)

export function compileParam(sql: Sql, def: SearchParamDef, modifier: string | undefined, values: string[], scope: Scope, baseUrl: string): Fragment {
  const r = sql(scope.alias)
  if (def.code === '_id') {
    if (modifier && modifier !== 'not') throw invalid(`Invalid modifier :${modifier} for parameter _id`)
    const ids = values.map(unescape)
    // One id is an equality: a range of the unique (res_type, id) key whatever the plan knows of the
    // table. With `= any(array)`, a generic plan made while the table was small read every resource of
    // the type (a conditional create checks its new resource this way: each one took longer than the last).
    const match = ids.length === 1 ? sql`${r}.id = ${ids[0]}` : sql`${r}.id = any(${ids}::text[])`
    return modifier === 'not' ? sql`not (${match})` : match
  }
  if (def.code === '_lastUpdated') return compileLastUpdated(sql, modifier, values, r)
  const { table, match, negated } = paramRows(sql, def, modifier, values, scope, baseUrl)
  const perRow = negated || scope.probes
  // A probe names no res_type (the rows of a rid are its resource's): a lookup index, which starts with
  // res_type, is then no candidate, and the rid key is (a generic plan without statistics preferred the
  // smaller lookup and read every row of the value for each resource probed).
  const typeFilter = scope.type !== undefined && !perRow ? sql`and i.res_type = ${scope.type}` : sql``
  const exists = sql`exists (select 1 from ${sql(table)} i where i.rid = ${r}.rid ${typeFilter} and ${codeMatch(sql, def)} and (${match}) ${probe(sql, perRow)})`
  return negated ? sql`not ${exists}` : exists
}

interface ParamRows {
  table: string
  match: Fragment
  negated: boolean
}

/** One criterion's rows as last made, by its values (see paramRows). */
const made = new WeakMap<readonly string[], { sql: Sql; def: SearchParamDef; modifier?: string; resType: string; baseUrl: string; rows: ParamRows }>()

// The index table of a parameter and the predicate its rows `i` must meet (values ORed); `negated` for
// modifiers answered as NOT EXISTS of that predicate.
// Made once per criterion and statement: a bounded page (bounded.ts) places a criterion in each of its
// branches, counts and probes, and made its predicate anew each time (a date beside a code: 8 times, 365
// fragments for the statement). The fragment has no state of its own: each place it is written in binds
// its values again, so the statement is the same text with the same parameters.
export function paramRows(sql: Sql, def: SearchParamDef, modifier: string | undefined, values: string[], scope: Scope, baseUrl: string): ParamRows {
  const resType = scope.type ?? ''
  const last = made.get(values)
  if (last && last.sql === sql && last.def === def && last.modifier === modifier && last.resType === resType && last.baseUrl === baseUrl) return last.rows
  const h = handlerFor(def.type)
  if (!h) throw unsupported(def)
  if (modifier !== undefined && !h.modifiers.has(modifier) && !h.acceptsModifier?.(modifier))
    throw invalid(`Invalid modifier :${modifier} for parameter ${def.code} of type ${def.type}`)
  const ctx: PredicateContext = { def, modifier, resType, baseUrl }
  const ors = values.map((v) => sql`(${h.predicate(sql, v, ctx)})`)
  const rows = { table: h.table, match: join(sql, ors, sql` or `), negated: modifier !== undefined && h.negating?.has(modifier) === true }
  made.set(values, { sql, def, modifier, resType, baseUrl, rows })
  return rows
}

export function compileLastUpdated(sql: Sql, modifier: string | undefined, values: string[], r: postgres.Helper<string>): Fragment {
  if (modifier) throw invalid(`Invalid modifier :${modifier} for parameter _lastUpdated`)
  // The version's instant, at any precision (it has no calendar day as written).
  const at = sql`${r}.last_updated`
  const ors = values.map((v) => sql`(${datePredicate(sql, unescape(v), '_lastUpdated', { lo: at, hi: at })})`)
  return sql`(${join(sql, ors, sql` or `)})`
}

/**
 * The index rows `i` of a parameter: its code, or for a union parameter its members' codes (as ORed
 * equalities, each a range of a lookup index; `= any(...)` would leave the code to a filter).
 */
export function codeMatch(sql: Sql, def: SearchParamDef): Fragment {
  const codes = storedCodes(def)
  return codes.length === 1
    ? sql`i.code = ${codes[0]}`
    : sql`(${join(
        sql,
        codes.map((c) => sql`i.code = ${c}`),
        sql` or `,
      )})`
}

export function unsupported(def: SearchParamDef): AppError {
  return new AppError('not-allowed', `Search on parameters of type ${def.type} (${def.code}) is not supported yet`)
}
