// The parsed form of a search: what parse.ts produces from the query string and compile.ts turns into
// SQL. No SQL and no HTTP here. https://hl7.org/fhir/R4/search.html
import type { Subset } from '../../subset'
import type { SearchParamDef } from '../registry'

/** One search parameter occurrence: its values are ORed; the criteria of a query are ANDed. */
export type Criterion =
  | { kind: 'param'; def: SearchParamDef; modifier?: string; values: string[] }
  | { kind: 'missing'; def: SearchParamDef; missing: boolean }
  /** `ref[:Type].chained=...`: the reference's target, of one of the branch types, matches that branch's criterion. */
  | { kind: 'chain'; def: SearchParamDef; branches: { type: string; inner: Criterion }[] }
  /** Any of several criteria (a `_filter` `or`). */
  | { kind: 'or'; any: Criterion[] }
  /** In the compartment of `compartmentType/id`: references it through one of the reference parameters `codes`. */
  | { kind: 'compartment'; compartmentType: string; id: string; codes: string[] }
  /** `_text` / `_content`: PostgreSQL full-text search on the narrative or on all text. */
  | { kind: 'fulltext'; field: 'narrative' | 'content'; values: string[] }
  /** `_has:Type:ref:param=...`: some `Type` referencing this resource through `ref` matches `inner`. */
  | { kind: 'has'; sourceType: string; refCode: string; inner: Criterion }
  /** All of several criteria (a `_filter` `and` below an `or` or a `not`). */
  | { kind: 'and'; all: Criterion[] }
  /** The resource does not match `inner` (`_filter` `not(...)`). */
  | { kind: 'not'; inner: Criterion }
  /** A `_filter` comparison `code op value` on one of the resource's own parameters. */
  | { kind: 'compare'; def: SearchParamDef; op: FilterOp; value: string }

/** The comparison operators of `_filter` this server supports. https://hl7.org/fhir/R4/search_filter.html#ops */
import type { FilterOp } from '../types'
export type { FilterOp }

export interface IncludeSpec {
  sourceType: string
  /** Reference parameter code, or '*' for all of them. */
  code: string
  targetType?: string
  iterate: boolean
}

export interface SortSpec {
  /** `_id`, `_lastUpdated` or a parameter of the searched type. */
  code: string
  def?: SearchParamDef
  desc: boolean
}

export interface SearchQuery {
  types: string[]
  criteria: Criterion[]
  include: IncludeSpec[]
  revinclude: IncludeSpec[]
  sort: SortSpec[]
  count: number
  /** `_offset`: the page starts after this many matches (HAPI's synchronous offset paging). */
  offset?: number
  /** Resources `_include` and `_revinclude` may add to the page (include.ts's default when absent). */
  maxIncluded?: number
  total?: 'none' | 'estimate' | 'accurate'
  summaryCount: boolean
  subset?: Subset
  /** Parameters the client sent that shape the answer (for the self link), normalised. */
  raw: URLSearchParams
}
