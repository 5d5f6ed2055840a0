// Composite parameters. Write side: for each node the composite's expression selects, the rows of each
// component evaluated on that node, combined pairwise, so `code-value-quantity` matches a code and
// a value of the same Observation (or the same component). Read side: each part of `a$b` on its
// columns of the same row. https://hl7.org/fhir/R4/search.html#composite
import type { Sql } from '../../../db/client'
import { textColumns } from '../../../db/text-columns'
import { AppError, invalid } from '../../../errors'
import { splitEscaped, unescape } from '../escape'
import { type Evaluator, type Fragment, type Keyed, registeredTypes, registerParamType } from './param-type'
import type { SearchParamType } from '../registry'
import type { ExtractContext, TypedValue } from './typed-value'
import { type DateRow, datePredicate } from './date'
import { type NumberRow, numberPredicate, type TargetRange } from './number'
import { type QuantityRow, quantityPredicate } from './quantity'
import type { ReferenceRow } from './reference'
import { likePrefix, normalizeString, type StringRow } from './string'
import type { TokenRow } from './token'
import type { UriRow } from './uri'

export type ComponentRow = StringRow | TokenRow | ReferenceRow | DateRow | NumberRow | QuantityRow | UriRow

export interface CompositePart {
  type: SearchParamType
  /** Carries the component's own parameter code (`code`, `value-quantity`). */
  row: ComponentRow
}

export interface CompositeRow {
  code: string
  parts: CompositePart[]
}

export interface ComponentPlan {
  code: string
  type: SearchParamType
  /** The same for every composite whose component has this code, type and expression. */
  key: string
  /** Values of the component's expression on one root node. */
  values: (root: TypedValue, resource: unknown) => TypedValue[]
  extract: (values: TypedValue[], ctx: ExtractContext) => ComponentRow[]
}

/**
 * The rows of a composite's components on each node its expression selects, combined pairwise. `parts`
 * keeps a component's rows on a node for the other composites of the same resource: Observation's four
 * code-value-* composites share the `code` component, the component-* ones `component.code` (the rows
 * are read, never changed).
 */
export function extractComposite(roots: TypedValue[], ctx: ExtractContext, components: ComponentPlan[], resource: unknown, parts: PartRows): CompositeRow[] {
  const out: CompositeRow[] = []
  const code = ctx.code
  const partCtx: ExtractContext = { code, baseUrl: ctx.baseUrl }
  for (const root of roots) {
    let combos: CompositePart[][] = [[]]
    for (const c of components) {
      const rows = componentRows(c, root, resource, partCtx, parts)
      if (rows.length === 0) {
        combos = []
        break
      }
      const next: CompositePart[][] = []
      for (const p of combos) for (const row of rows) next.push([...p, { type: c.type, row }])
      combos = next
    }
    for (const p of combos) out.push({ code, parts: p })
  }
  return out
}

/** Component rows by node, then by ComponentPlan.key: one extraction's. */
export type PartRows = Map<unknown, Map<string, ComponentRow[]>>

function componentRows(c: ComponentPlan, root: TypedValue, resource: unknown, ctx: ExtractContext, parts: PartRows): ComponentRow[] {
  let byKey = parts.get(root.value)
  const known = byKey?.get(c.key)
  if (known) return known
  ctx.code = c.code
  // a token part needs a code: text-only rows (CodeableConcept.text) cannot match `system|code$...`
  const rows = c.extract(c.values(root, resource), ctx).filter((r) => c.type !== 'token' || (r as TokenRow).value !== null)
  if (!byKey) parts.set(root.value, (byKey = new Map()))
  byKey.set(c.key, rows)
  return rows
}

// A component's expression is relative to the composite's nodes, which may be of several types
// (`Observation | Observation.component`): compiled per node type on first sight.
function componentPlan(
  c: { code: string; type: SearchParamType; expression: string },
  compile: (expression: string, rootType: string) => Evaluator,
): ComponentPlan {
  const byType = new Map<string, Evaluator>()
  const extract = registeredTypes.get(c.type)?.extract ?? (() => [])
  return {
    code: c.code,
    type: c.type,
    key: `${c.type} ${c.code} ${c.expression}`,
    values: (root, resource) => {
      let evaluate = byType.get(root.type)
      if (!evaluate) {
        evaluate = compile(c.expression, root.type)
        byType.set(root.type, evaluate)
      }
      return evaluate(root.value, root.type, resource)
    },
    extract,
  }
}

interface CompositeColumns {
  rid: string
  resType: string
  code: string
  system1: string | null
  value1: string | null
  system2: string | null
  value2: string | null
  lo2: number | null
  hi2: number | null
  unit2: string | null
  dlo2: string | null
  dhi2: string | null
}

/** The properties of CompositeColumns in the table's column order. */
const COLUMN_KEYS = ['rid', 'resType', 'code', 'system1', 'value1', 'system2', 'value2', 'lo2', 'hi2', 'unit2', 'dlo2', 'dhi2'] as const

/** The rows as the table's columns, those not indexed left out. */
function compositeRows(rows: Keyed<CompositeRow>[]): CompositeColumns[] {
  return rows.map(compositeColumns).filter((c): c is CompositeColumns => c !== undefined)
}

/** A two-part composite (first part a token) in the columns of its second part's kind; others are not indexed. */
function compositeColumns(row: Keyed<CompositeRow>): CompositeColumns | undefined {
  if (row.parts.length !== 2 || row.parts[0].type !== 'token') return undefined
  const first = row.parts[0].row as any
  const second = row.parts[1]
  const s = second.row as any
  const out: CompositeColumns = {
    rid: row.rid,
    resType: row.resType,
    code: row.code,
    system1: first.system,
    value1: first.value,
    system2: null,
    value2: null,
    lo2: null,
    hi2: null,
    unit2: null,
    dlo2: null,
    dhi2: null,
  }
  // The second part's columns filled in place (one object a row, not one per column kind).
  switch (second.type) {
    case 'token':
      out.system2 = s.system
      out.value2 = s.value
      return out
    case 'string':
      out.value2 = s.value_norm
      return out
    case 'uri':
      out.value2 = s.value
      return out
    case 'number':
      out.lo2 = s.lo
      out.hi2 = s.hi
      return out
    case 'quantity':
      out.lo2 = s.lo
      out.hi2 = s.hi
      out.system2 = s.system
      out.unit2 = s.unitCode ?? s.unit
      return out
    case 'date':
      out.dlo2 = s.lo
      out.dhi2 = s.hi
      return out
    default:
      return undefined
  }
}

// ---------------------------------------------------------------------------------------------------
// Read side: `a$b`, the first part a token on (system1, value1), the second by its component's type on
// the columns compositeColumns keeps it in, with the same semantics (and prefixes) as the single-type
// handlers. HAPI supports exactly two components (HAPI-1224). https://hl7.org/fhir/R4/search.html#composite

export const compositeType = registerParamType<CompositeRow>({
  type: 'composite',
  table: 'idx_composite',
  // A composite's rows come from its components (extractorFor); it has no values of its own.
  extract: () => [],
  extractorFor: (def, compile) => {
    const components = (def.components ?? []).map((c) => componentPlan(c, compile))
    return (roots, ctx, state) => extractComposite(roots, ctx, components, state.resource, state.shared as PartRows)
  },
  copy: {
    columns: ['rid', 'res_type', 'code', 'system1', 'value1', 'system2', 'value2', 'lo2', 'hi2', 'unit2', 'dlo2', 'dhi2'],
    keys: COLUMN_KEYS,
    shape: compositeRows,
  },
  insert: (tx, rows) => {
    const comp = compositeRows(rows)
    if (comp.length === 0) return undefined
    return tx`ins_composite as (insert into idx_composite (rid, res_type, code, system1, value1, system2, value2, lo2, hi2, unit2, dlo2, dhi2)
      select rid::bigint, res_type, code, system1, value1, system2, value2, lo2::numeric, hi2::numeric, unit2, dlo2::timestamptz, dhi2::timestamptz
      from ${textColumns(tx, comp, COLUMN_KEYS)} as x(rid, res_type, code, system1, value1, system2, value2, lo2, hi2, unit2, dlo2, dhi2))`
  },
  // Two parts on one row: a range at worst.
  driverRank: 3,
  modifiers: new Set(),
  predicate(sql, raw, ctx) {
    const { code, components = [] } = ctx.def
    if (components.length !== 2) throw invalid(`HAPI-1224: Parameter ${code} has ${components.length} composite parts. Only two are supported.`)
    const parts = splitEscaped(raw, '$')
    if (parts.length > 2) throw invalid(`HAPI-1224: Value "${raw}" of parameter ${code} has ${parts.length} composite parts. Only two are supported.`)
    if (parts.length < 2) throw invalid(`Invalid value "${raw}" for composite parameter ${code}: expected two parts separated by "$"`)
    // compositeColumns keeps a composite only when its first part is a token
    if (components[0].type !== 'token') throw unsupported(code, components[0].type, components[1].type)
    return sql`${tokenPredicate(sql, parts[0], code, sql`i.system1`, sql`i.value1`)} and ${secondPredicate(sql, components[1].type, parts[1], code)}`
  },
})

const unsupported = (code: string, first: SearchParamType, second: SearchParamType) =>
  new AppError('not-allowed', `Composite search on ${code} (${first} and ${second}) is not supported`)

function secondPredicate(sql: Sql, type: SearchParamType, raw: string, code: string): Fragment {
  switch (type) {
    case 'token':
      return tokenPredicate(sql, raw, code, sql`i.system2`, sql`i.value2`)
    case 'string':
      return sql`i.value2 like ${likePrefix(normalizeString(unescape(raw)))}`
    case 'uri':
      return sql`i.value2 = ${unescape(raw)}`
    case 'number':
      return numberPredicate(sql, unescape(raw), code, numericTarget(sql))
    case 'quantity':
      return quantityPredicate(sql, raw, code, { target: numericTarget(sql), system: sql`i.system2`, code: sql`i.unit2` })
    case 'date':
      return datePredicate(sql, unescape(raw), code, { lo: sql`i.dlo2`, hi: sql`i.dhi2` })
    default:
      throw unsupported(code, 'token', type)
  }
}

// Token semantics as in token.ts ([system]|[code], |[code], [system]|, [code]), on a composite's columns.
function tokenPredicate(sql: Sql, raw: string, code: string, system: Fragment, value: Fragment): Fragment {
  const parts = splitEscaped(raw, '|')
  if (parts.length > 2) throw invalid(`Invalid token value "${raw}" for parameter ${code}: more than one "|"`)
  const s = unescape(parts[0])
  if (parts.length === 1) {
    if (s === '') throw invalid(`Missing value for parameter ${code}`)
    return sql`${value} = ${s}`
  }
  const c = unescape(parts[1])
  if (s === '' && c === '') throw invalid(`Invalid token value "${raw}" for parameter ${code}`)
  if (s === '') return sql`${system} is null and ${value} = ${c}`
  if (c === '') return sql`${system} = ${s}`
  return sql`${value} = ${c} and ${system} = ${s}`
}

/**
 * A number or quantity part is kept only as [lo2, hi2]: the precision range of a value, or a Range's
 * ends. A precision range (width one unit of its midpoint's last digit) is read back as its value, so
 * a part compares as the single-type handlers compare; anything else is a range, a null end open.
 */
function numericTarget(sql: Sql): TargetRange {
  const mid = sql`trim_scale((i.lo2 + i.hi2) / 2)`
  const isValue = sql`i.hi2 - i.lo2 = power(10::numeric, -scale(${mid}))`
  return { lo: sql`(case when ${isValue} then ${mid} else i.lo2 end)`, hi: sql`(case when ${isValue} then ${mid} else i.hi2 end)`, open: true }
}
