// Index extraction for a write: every search parameter of the resource's type evaluated and turned
// into deduplicated rows by its type's extractor. `_id` and `_lastUpdated` come from the resource row
// and `_text`/`_content` from full-text columns, so they give no rows here; `_tag`, `_security`,
// `_profile` and `_source` do (from meta). https://hl7.org/fhir/R4/search.html
import { type Evaluator, compileExpression } from './evaluate'
import { type ComponentPlan, type CompositeRow, extract as compositeExtract, type PartRows } from './types/composite'
import { type DateRow, extract as dateExtract } from './types/date'
import { type NumberRow, extract as numberExtract } from './types/number'
import { type QuantityRow, extract as quantityExtract } from './types/quantity'
import { type ReferenceRow, extract as referenceExtract } from './types/reference'
import { type StringRow, extract as stringExtract } from './types/string'
import { type TokenRow, extract as tokenExtract } from './types/token'
import { type UriRow, extract as uriExtract } from './types/uri'
import { registryGeneration, type SearchParamDef, type SearchParamType, searchParamsFor, unionMembers } from './registry'
import type { ExtractContext, TypedValue } from './typed-value'

export interface IndexRows {
  string: StringRow[]
  token: TokenRow[]
  reference: ReferenceRow[]
  date: DateRow[]
  number: NumberRow[]
  quantity: QuantityRow[]
  uri: UriRow[]
  composite: CompositeRow[]
}

export type IndexType = keyof IndexRows

type Extractor = (values: TypedValue[], ctx: ExtractContext) => any[]

const EXTRACTORS: Partial<Record<SearchParamType, Extractor>> = {
  string: stringExtract,
  token: tokenExtract,
  reference: referenceExtract,
  date: dateExtract,
  number: numberExtract,
  quantity: quantityExtract,
  uri: uriExtract,
}

interface ParamPlan {
  def: SearchParamDef
  type: IndexType
  evaluate: Evaluator
  extract: (values: TypedValue[], ctx: ExtractContext, resource: unknown, parts: PartRows) => any[]
}

const plans = new Map<string, ParamPlan[]>()
let plansGeneration = -1

export function emptyIndexRows(): IndexRows {
  return { string: [], token: [], reference: [], date: [], number: [], quantity: [], uri: [], composite: [] }
}

/** The index rows of `resource` for every search parameter of its type; empty for an unknown type. */
export function extractIndexes(resource: any, opts: { baseUrl?: string } = {}): IndexRows {
  const rows = emptyIndexRows()
  const type = resource?.resourceType
  if (typeof type !== 'string') return rows
  const ctx: ExtractContext = { code: '', baseUrl: opts.baseUrl }
  const parts: PartRows = new Map()
  for (const p of plansFor(type)) {
    const values = p.evaluate(resource, type, resource)
    if (values.length === 0) continue
    ctx.code = p.def.code
    const target = rows[p.type] as any[]
    const found = p.extract(values, ctx, resource, parts)
    // Rows carry their parameter's code, so only rows of one parameter can repeat each other; most
    // parameters give a single row.
    if (found.length === 1) target.push(found[0])
    else if (found.length > 1) {
      const seen = new Set<string>()
      for (const row of found) {
        const key = rowKey(row)
        if (seen.has(key)) continue
        seen.add(key)
        target.push(row)
      }
    }
  }
  return rows
}

/** The parameters of `type` that produce index rows, compiled once. */
function plansFor(type: string): ParamPlan[] {
  if (plansGeneration !== registryGeneration()) {
    plans.clear() // custom search parameters changed
    plansGeneration = registryGeneration()
  }
  let list = plans.get(type)
  if (list) return list
  list = []
  for (const def of searchParamsFor(type).values()) {
    const plan = planOf(def, type)
    if (plan) list.push(plan)
  }
  plans.set(type, list)
  return list
}

function planOf(def: SearchParamDef, type: string): ParamPlan | undefined {
  if (!def.expression || def.type === 'special') return undefined // near: Location.position, read from the resource
  if (def.common && def.common !== 'meta') return undefined
  if (unionMembers(def)) return undefined // searched on its members' rows
  const evaluate = compileExpression(def.expression, type)
  if (def.type === 'composite') {
    const components = (def.components ?? []).map(componentPlan)
    return {
      def,
      type: 'composite',
      evaluate,
      extract: (roots, ctx, resource, parts) => compositeExtract(roots, ctx, components, resource, parts),
    }
  }
  const extract = EXTRACTORS[def.type]
  return extract ? { def, type: def.type as IndexType, evaluate, extract } : undefined
}

// A component's expression is relative to the composite's nodes, which may be of several types
// (`Observation | Observation.component`): compiled per node type on first sight.
function componentPlan(c: { code: string; type: SearchParamType; expression: string }): ComponentPlan {
  const byType = new Map<string, Evaluator>()
  const extract = EXTRACTORS[c.type] ?? (() => [])
  return {
    code: c.code,
    type: c.type,
    key: `${c.type} ${c.code} ${c.expression}`,
    values: (root, resource) => {
      let evaluate = byType.get(root.type)
      if (!evaluate) {
        evaluate = compileExpression(c.expression, root.type, { relative: true })
        byType.set(root.type, evaluate)
      }
      return evaluate(root.value, root.type, resource)
    },
    extract,
  }
}

function rowKey(row: any): string {
  let key = ''
  for (const k in row) {
    const v = row[k]
    key += v === null ? '\u0001' : typeof v === 'object' ? JSON.stringify(v) : String(v)
    key += '\u0000'
  }
  return key
}
