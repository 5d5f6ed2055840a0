// The contract of one search-parameter type, and the registry each type enters itself in. A type owns
// its whole lifecycle: its index table, how the values a parameter's expression selects become index
// rows (extract) and how those rows are inserted, how a search value becomes a predicate over the rows
// for each modifier and prefix, how a resource sorts by them, and how likely a criterion on them is to
// be selective. Each types/<type>.ts registers one (as Blaze's search_param/<type>.clj each define
// theirs); types/index.ts imports every one of them and is what the index and query sides read.
import type { TxSql, Sql } from '../../../db/client'
import type { SearchParamDef, SearchParamType } from '../registry'
import type { ExtractContext, TypedValue } from './typed-value'

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

/** A `_filter` comparison operator. https://hl7.org/fhir/R4/search_filter.html */
export type FilterOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'lt' | 'ge' | 'le' | 'sa' | 'eb' | 'ap'

/** Date, number and quantity: the operator becomes the value's prefix. https://hl7.org/fhir/R4/search.html#prefix */
export const PREFIX_OPS: readonly FilterOp[] = ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap']

/** An index row once it belongs to a stored version. */
export type Keyed<T> = T & { rid: string; resType: string }

/** Values of a relative expression (a composite's component) on one node of type `focusType`. */
export type Evaluator = (focus: unknown, focusType: string, resource: unknown) => TypedValue[]

/** What an extractor is handed besides the values: the resource, and what one extraction shares. */
export interface ExtractState {
  resource: unknown
  /** Rows one extraction keeps for its parameters to share (composites: their components' rows). */
  shared: Map<unknown, Map<string, unknown[]>>
}

/** The rows of one parameter from the values its expression selects. */
export type Extractor<Row> = (values: TypedValue[], ctx: ExtractContext, state: ExtractState) => Row[]

/** The read-side part of a type: what compile.ts and execute.ts ask of it. */
export interface ParamHandler {
  /** The index table of this type; its rows are aliased `i` in predicates. */
  table: string
  /** Modifiers accepted besides `:missing` (which compile.ts handles for every type). */
  modifiers: ReadonlySet<string>
  /** One value (commas already split, escapes kept) as a predicate over `i`; throws `invalid` on a bad value. */
  predicate(sql: Sql, value: string, ctx: PredicateContext): Fragment
  /** Modifiers accepted beyond the fixed set (reference: a resource type, `:Patient`). */
  acceptsModifier?(modifier: string): boolean
  /** Modifiers answered as NOT EXISTS of the positive predicate (token `:not`). */
  negating?: ReadonlySet<string>
  /** The value one resource sorts by, aggregated over its rows `i` (min ascending, max descending); several
   *  for a type that sorts by more than one column (token: system, then code). */
  sortValue?(sql: Sql, desc: boolean): Fragment | Fragment[]
  /** The `_filter` operators a comparison on this type takes; without them the type is not usable in `_filter`. */
  filterOps?: readonly FilterOp[]
  /**
   * One `_filter` comparison as a predicate over `i`, its value answered by `h`'s predicate where it
   * needs one (filter.ts passes the type itself); without it the operator is the value's prefix
   * (`birthdate ge 2020` is `birthdate=ge2020`).
   */
  compare?(sql: Sql, op: FilterOp, value: string, ctx: PredicateContext, h: ParamHandler): Fragment
}

export interface ParamType<Row = any> extends ParamHandler {
  type: SearchParamType
  // Index side.
  /** The rows of one value list (a composite's component uses it too). */
  extract(values: TypedValue[], ctx: ExtractContext): Row[]
  /**
   * The extractor of one parameter of this type, when it needs its definition (a composite: its
   * components, their expressions compiled by `compile`); the default is `extract`.
   */
  extractorFor?(def: SearchParamDef, compile: (expression: string, rootType: string) => Evaluator): Extractor<Row>
  /**
   * Completes this type's rows of one stored resource once all its rows are extracted, from its rows of
   * other types (token: the Patient the resource references, from its reference rows).
   */
  complete?(rows: Row[], all: Record<string, unknown[]>): void
  /**
   * The table's columns as COPY fills them for new resources (index/index-copy.ts), and the row property
   * of each: the same columns, order and properties as `insert`; `shape` makes the objects COPY reads
   * of the rows when they are not the rows themselves (as `insert` reshapes them). None: the type's rows
   * keep their CTE.
   */
  copy?: { columns: readonly string[]; keys: readonly string[]; shape?(rows: Keyed<Row>[]): object[] }
  /** The CTE (`ins_<type> as (insert ...)`) that inserts rows of stored versions; undefined when none is kept. */
  insert(tx: TxSql, rows: Keyed<Row>[]): Fragment | undefined
  // Query side.
  /**
   * How likely a criterion on this type's rows is to be selective, lower first: a one-type search is
   * driven from its likeliest criteria (compile.ts driverCandidates), which bounded.ts then measures.
   */
  driverRank: number
}

const types = new Map<SearchParamType, ParamType>()

/** Enters a type in the registry (once, from its own module) and returns it. */
export function registerParamType<Row>(t: ParamType<Row>): ParamType<Row> {
  if (types.has(t.type)) throw new Error(`search parameter type ${t.type} registered twice`)
  types.set(t.type, t)
  return t
}

/** The registered types, in the order they registered. Read through types/index.ts, which registers them all. */
export const registeredTypes: ReadonlyMap<SearchParamType, ParamType> = types
