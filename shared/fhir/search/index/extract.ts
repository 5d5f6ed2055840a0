// Index extraction for a write: every search parameter of the resource's type evaluated and turned
// into deduplicated rows by its type's extractor. `_id` and `_lastUpdated` come from the resource row
// and `_text`/`_content` from full-text columns, so they give no rows here; `_tag`, `_security`,
// `_profile` and `_source` do (from meta). https://hl7.org/fhir/R4/search.html
import { compileExpression } from './evaluate'
import { registryGeneration, type SearchParamDef, searchParamsFor, unionMembers } from '../registry'
import { type Evaluator, type ExtractState, type Extractor, paramType, paramTypes } from '../types'
import type { CompositeRow } from '../types/composite'
import type { DateRow } from '../types/date'
import type { NumberRow } from '../types/number'
import type { QuantityRow } from '../types/quantity'
import type { ReferenceRow } from '../types/reference'
import type { StringRow } from '../types/string'
import type { TokenRow } from '../types/token'
import type { ExtractContext } from '../types/typed-value'
import type { UriRow } from '../types/uri'

/** The rows of each registered type (types/index.ts); typed here for the readers of known types. */
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

interface ParamPlan {
  def: SearchParamDef
  type: IndexType
  evaluate: Evaluator
  extract: Extractor<unknown>
}

const plans = new Map<string, ParamPlan[]>()
let plansGeneration = -1

export function emptyIndexRows(): IndexRows {
  const rows: Record<string, unknown[]> = {}
  for (const t of paramTypes()) rows[t.type] = []
  return rows as unknown as IndexRows
}

/** The index rows of `resource` for every search parameter of its type; empty for an unknown type. */
export function extractIndexes(resource: any, opts: { baseUrl?: string } = {}): IndexRows {
  const rows = emptyIndexRows()
  const type = resource?.resourceType
  if (typeof type !== 'string') return rows
  const ctx: ExtractContext = { code: '', baseUrl: opts.baseUrl }
  const state: ExtractState = { resource, shared: new Map() }
  for (const p of plansFor(type)) {
    const values = p.evaluate(resource, type, resource)
    if (values.length === 0) continue
    ctx.code = p.def.code
    const target = rows[p.type] as any[]
    const found = p.extract(values, ctx, state)
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
  const t = paramType(def.type)
  if (!t) return undefined
  const extract = t.extractorFor ? t.extractorFor(def, (expression, rootType) => compileExpression(expression, rootType, { relative: true })) : t.extract
  return { def, type: def.type as IndexType, evaluate, extract }
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
