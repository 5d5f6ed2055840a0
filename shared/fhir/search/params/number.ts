// Number parameters, write side: a decimal or integer becomes its value and the range its precision
// implies (`100` covers [99.5, 100.5), `1.50` would cover [1.495, 1.505)); a Range gives its two ends.
// https://hl7.org/fhir/R4/search.html#number
import type { ExtractContext, TypedValue } from '../typed-value'

export interface NumberRow {
  code: string
  /** The value; null for a Range (its ends are lo and hi). */
  value: number | null
  /** Lower bound, inclusive; null when open. */
  lo: number | null
  /** Upper bound (exclusive for a precision range); null when open. */
  hi: number | null
}

/**
 * [lo, hi) implied by the significant digits of `value` as written: half a unit of its last decimal
 * place either side. JSON numbers lose trailing zeros, so `1.50` in a resource reads as `1.5`.
 */
export function precisionRange(value: number): [number, number] {
  const text = String(value)
  const e = text.indexOf('e')
  const mantissa = e < 0 ? text : text.slice(0, e)
  const exponent = e < 0 ? 0 : Number(text.slice(e + 1))
  const dot = mantissa.indexOf('.')
  const decimals = (dot < 0 ? 0 : mantissa.length - dot - 1) - exponent
  const half = 5 * 10 ** -(decimals + 1)
  const digits = Math.min(Math.max(decimals + 1, 0), 100)
  return [Number((value - half).toFixed(digits)), Number((value + half).toFixed(digits))]
}

const NUMERIC = new Set(['decimal', 'integer', 'positiveInt', 'unsignedInt'])

export function extract(values: TypedValue[], ctx: ExtractContext): NumberRow[] {
  const out: NumberRow[] = []
  for (const { type, value } of values) {
    if (typeof value === 'number' && Number.isFinite(value) && (NUMERIC.has(type) || type === 'number')) {
      const [lo, hi] = precisionRange(value)
      out.push({ code: ctx.code, value, lo, hi })
    } else if (type === 'Range' && value && typeof value === 'object') {
      const lo = typeof value.low?.value === 'number' ? value.low.value : null
      const hi = typeof value.high?.value === 'number' ? value.high.value : null
      if (lo !== null || hi !== null) out.push({ code: ctx.code, value: null, lo, hi })
    }
  }
  return out
}
