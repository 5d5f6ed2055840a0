// Quantity parameters, write side: Quantity and its profiles (Age, Duration, Distance, Count,
// SimpleQuantity), Money (system ISO 4217, code the currency) and Range become value, the precision
// range of the value, and system|code|unit. https://hl7.org/fhir/R4/search.html#quantity
import type { ExtractContext, TypedValue } from '../typed-value'
import { precisionRange } from './number'

export interface QuantityRow {
  code: string
  /** The value; null for a Range (its ends are lo and hi). */
  value: number | null
  lo: number | null
  hi: number | null
  system: string | null
  /** Quantity.code: the coded unit (UCUM for most). */
  unitCode: string | null
  unit: string | null
}

// https://hl7.org/fhir/R4/datatypes.html#Money
export const CURRENCY_SYSTEM = 'urn:iso:std:iso:4217'

const QUANTITY_TYPES = new Set(['Quantity', 'Age', 'Duration', 'Distance', 'Count', 'SimpleQuantity', 'MoneyQuantity'])

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null)

export function extract(values: TypedValue[], ctx: ExtractContext): QuantityRow[] {
  const out: QuantityRow[] = []
  for (const { type, value: q } of values) {
    if (!q || typeof q !== 'object') continue
    if (QUANTITY_TYPES.has(type)) {
      if (typeof q.value !== 'number') continue
      const [lo, hi] = precisionRange(q.value)
      out.push({ code: ctx.code, value: q.value, lo, hi, system: str(q.system), unitCode: str(q.code), unit: str(q.unit) })
    } else if (type === 'Money') {
      if (typeof q.value !== 'number') continue
      const [lo, hi] = precisionRange(q.value)
      const currency = str(q.currency)
      out.push({ code: ctx.code, value: q.value, lo, hi, system: currency && CURRENCY_SYSTEM, unitCode: currency, unit: currency })
    } else if (type === 'Range') {
      const low = typeof q.low?.value === 'number' ? q.low : undefined
      const high = typeof q.high?.value === 'number' ? q.high : undefined
      const unitOf = low ?? high
      if (!unitOf) continue
      out.push({
        code: ctx.code,
        value: null,
        lo: low ? low.value : null,
        hi: high ? high.value : null,
        system: str(unitOf.system),
        unitCode: str(unitOf.code),
        unit: str(unitOf.unit),
      })
    }
  }
  return out
}
