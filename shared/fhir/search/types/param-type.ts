// The read-side contract of one search-parameter type: how a value becomes a predicate over that
// type's index rows, and how those rows sort. Each types/<type>.ts implements it beside its extract().
import type { Sql } from '../../../db/client'
import type { SearchParamDef } from '../registry'

export type { Fragment } from '../../../db/fragments'
import type { Fragment } from '../../../db/fragments'

export interface PredicateContext {
  def: SearchParamDef
  modifier?: string
  /** The searched resource type (the index rows' res_type). */
  resType: string
  /** This server's FHIR base, for absolute references to local resources. */
  baseUrl: string
}

export interface ParamHandler {
  /** The index table of this type; its rows are aliased `i` in predicates. */
  table: string
  /** Modifiers accepted besides `:missing` (which compile.ts handles for every type). */
  modifiers: ReadonlySet<string>
  /** One value (commas already split, escapes kept) as a predicate over `i`; throws `invalid` on a bad value. */
  predicate(sql: Sql, value: string, ctx: PredicateContext): Fragment
  /** Modifiers answered as NOT EXISTS of the positive predicate (token `:not`). */
  negating?: ReadonlySet<string>
  /** The value one resource sorts by, aggregated over its rows `i` (min ascending, max descending); several
   *  for a type that sorts by more than one column (token: system, then code). */
  sortValue?(sql: Sql, desc: boolean): Fragment | Fragment[]
}
