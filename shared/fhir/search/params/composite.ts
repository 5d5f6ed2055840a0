// Composite parameters, write side: for each node the composite's expression selects, the rows of each
// component evaluated on that node, combined pairwise, so `code-value-quantity` matches a code and
// a value of the same Observation (or the same component). https://hl7.org/fhir/R4/search.html#composite
import type { SearchParamType } from '../registry'
import type { ExtractContext, TypedValue } from '../typed-value'
import type { DateRow } from './date'
import type { NumberRow } from './number'
import type { QuantityRow } from './quantity'
import type { ReferenceRow } from './reference'
import type { StringRow } from './string'
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
  /** Values of the component's expression on one root node. */
  values: (root: TypedValue, resource: unknown) => TypedValue[]
  extract: (values: TypedValue[], ctx: ExtractContext) => ComponentRow[]
}

export function extract(roots: TypedValue[], ctx: ExtractContext, components: ComponentPlan[], resource: unknown): CompositeRow[] {
  const out: CompositeRow[] = []
  const code = ctx.code
  const partCtx: ExtractContext = { code, baseUrl: ctx.baseUrl }
  for (const root of roots) {
    let combos: CompositePart[][] = [[]]
    for (const c of components) {
      partCtx.code = c.code
      // a token part needs a code: text-only rows (CodeableConcept.text) cannot match `system|code$...`
      const rows = c.extract(c.values(root, resource), partCtx).filter((r) => c.type !== 'token' || (r as TokenRow).value !== null)
      if (rows.length === 0) {
        combos = []
        break
      }
      combos = combos.flatMap((parts) => rows.map((row) => [...parts, { type: c.type, row }]))
    }
    for (const parts of combos) out.push({ code, parts })
  }
  return out
}
