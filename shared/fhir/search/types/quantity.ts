// Quantity parameters, write side: Quantity and its profiles (Age, Duration, Distance, Count,
// SimpleQuantity), Money (system ISO 4217, code the currency) and Range become value, the precision
// range of the value, and system|code|unit. https://hl7.org/fhir/R4/search.html#quantity
import type { Sql } from '../../../db/client'
import { invalid } from '../../../errors'
import { splitEscaped, unescape } from '../escape'
import { textColumns } from '../../../db/text-columns'
import { type Fragment, PREFIX_OPS, registerParamType } from './param-type'
import type { ExtractContext, TypedValue } from './typed-value'
import { numberPredicate, precisionRange, type TargetRange, valueOrRange } from './number'
import { decimalValue, numberText } from '../../format/json'

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
      const value = decimalValue(q.value)
      if (value === undefined) continue
      const [lo, hi] = precisionRange(value, numberText(q.value))
      out.push({ code: ctx.code, value, lo, hi, system: str(q.system), unitCode: str(q.code), unit: str(q.unit) })
    } else if (type === 'Money') {
      const value = decimalValue(q.value)
      if (value === undefined) continue
      const [lo, hi] = precisionRange(value, numberText(q.value))
      const currency = str(q.currency)
      out.push({ code: ctx.code, value, lo, hi, system: currency && CURRENCY_SYSTEM, unitCode: currency, unit: currency })
    } else if (type === 'Range') {
      const low = decimalValue(q.low?.value) !== undefined ? q.low : undefined
      const high = decimalValue(q.high?.value) !== undefined ? q.high : undefined
      const unitOf = low ?? high
      if (!unitOf) continue
      out.push({
        code: ctx.code,
        value: null,
        lo: low ? (decimalValue(low.value) as number) : null,
        hi: high ? (decimalValue(high.value) as number) : null,
        system: str(unitOf.system),
        unitCode: str(unitOf.code),
        unit: str(unitOf.unit),
      })
    }
  }
  return out
}

// Read side: `[prefix]number|system|code`. With a system, the code is Quantity.code; with `||code`
// (no system) it is Quantity.code or Quantity.unit; a number alone matches any unit. Units are not
// converted (no UCUM normalisation, as HAPI's default). https://hl7.org/fhir/R4/search.html#quantity

/** Where a quantity's parts are, in the index table at hand (idx_quantity or idx_composite). */
export interface QuantityColumns {
  target: TargetRange
  system: Fragment
  code: Fragment
  /** The human unit, when the table keeps it apart from the code. */
  unit?: Fragment
}

export function quantityPredicate(sql: Sql, raw: string, paramCode: string, cols: QuantityColumns): Fragment {
  const parts = splitEscaped(raw, '|')
  if (parts.length > 3) throw invalid(`Invalid quantity value "${raw}" for parameter ${paramCode}: expected [prefix]number|system|code`)
  const system = unescape(parts[1] ?? '')
  const code = unescape(parts[2] ?? '')
  let p = numberPredicate(sql, unescape(parts[0]), paramCode, cols.target, 'quantity')
  if (system !== '') p = sql`${p} and ${cols.system} = ${system}`
  if (code !== '') p = system === '' && cols.unit ? sql`${p} and (${cols.code} = ${code} or ${cols.unit} = ${code})` : sql`${p} and ${cols.code} = ${code}`
  return p
}

export const quantityType = registerParamType<QuantityRow>({
  type: 'quantity',
  table: 'idx_quantity',
  extract,
  copy: {
    columns: ['rid', 'res_type', 'code', 'value', 'lo', 'hi', 'system', 'unit_code', 'unit'],
    keys: ['rid', 'resType', 'code', 'value', 'lo', 'hi', 'system', 'unitCode', 'unit'],
  },
  insert: (tx, rows) =>
    tx`ins_quantity as (insert into idx_quantity (rid, res_type, code, value, lo, hi, system, unit_code, unit)
      select rid::bigint, res_type, code, value::numeric, lo::numeric, hi::numeric, system, unit_code, unit
      from ${textColumns(tx, rows, ['rid', 'resType', 'code', 'value', 'lo', 'hi', 'system', 'unitCode', 'unit'])} as x(rid, res_type, code, value, lo, hi, system, unit_code, unit))`,
  // A range: the likeliest to match many rows.
  driverRank: 3,
  modifiers: new Set(),
  predicate: (sql, raw, ctx) =>
    quantityPredicate(sql, raw, ctx.def.code, {
      target: valueOrRange(sql),
      system: sql`i.system`,
      code: sql`i.unit_code`,
      unit: sql`i.unit`,
    }),
  sortValue: (sql, desc) => (desc ? sql`max(coalesce(i.value, i.hi))` : sql`min(coalesce(i.value, i.lo))`),
  filterOps: PREFIX_OPS,
})
