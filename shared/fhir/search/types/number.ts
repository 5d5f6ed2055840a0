// Number parameters. Write side: a decimal or integer becomes its value and the range its precision
// implies (`100` covers [99.5, 100.5), `1.50` would cover [1.495, 1.505)); a Range gives its two ends.
// Read side: the search prefixes as range relations, shared with date, quantity and composite.
// https://hl7.org/fhir/R4/search.html#number
import type { Sql } from '../../../db/client'
import { invalid } from '../../../errors'
import { unescape } from '../escape'
import { textColumns } from '../../../db/text-columns'
import { type Fragment, PREFIX_OPS, registerParamType } from './param-type'
import type { ExtractContext, TypedValue } from './typed-value'
import { decimalValue, numberText } from '../../format/json'

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
 * place either side. `text` is the number as written (`1.50`: [1.495, 1.505]), kept by parseFhirJson.
 */
export function precisionRange(value: number, text: string = String(value)): [number, number] {
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
    const n = decimalValue(value)
    if (n !== undefined && Number.isFinite(n) && (NUMERIC.has(type) || type === 'number')) {
      const [lo, hi] = precisionRange(n, numberText(value))
      out.push({ code: ctx.code, value: n, lo, hi })
    } else if (type === 'Range' && value && typeof value === 'object') {
      const lo = decimalValue(value.low?.value) ?? null
      const hi = decimalValue(value.high?.value) ?? null
      if (lo !== null || hi !== null) out.push({ code: ctx.code, value: null, lo, hi })
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------------
// Read side. Prefixes and the range comparisons live here and are shared by date, quantity and
// composite: a search value stands for a range, an index row holds a range, and each prefix is a
// relation between the two. https://hl7.org/fhir/R4/search.html#prefix

export const PREFIXES = ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap'] as const
export type Prefix = (typeof PREFIXES)[number]

/**
 * `[prefix]value` split in two. Two leading letters are taken as the prefix, known or not (`bad` then
 * names it, for the caller's message); without letters the prefix is `eq`.
 */
export function splitPrefix(raw: string): { prefix: Prefix; rest: string; bad?: string } {
  const m = /^([a-z]{2})(.*)$/s.exec(raw)
  if (!m) return { prefix: 'eq', rest: raw }
  if (!(PREFIXES as readonly string[]).includes(m[1])) return { prefix: 'eq', rest: m[2], bad: m[1] }
  return { prefix: m[1] as Prefix, rest: m[2] }
}

/** The range a search value stands for, as bound SQL values: [lo, hi) or, with hiInclusive, [lo, hi]. */
export interface SearchRange {
  lo: Fragment
  hi: Fragment
  hiInclusive: boolean
}

/** An index row's range as SQL over `i`, both ends inclusive; with `open`, a null end is unbounded. */
export interface TargetRange {
  lo: Fragment
  hi: Fragment
  open?: boolean
}

/**
 * The prefix as a relation between the target range t and the search range s. Where the R4 table and
 * HAPI's DatePredicateBuilder differ (ge, le on a target that straddles the search range's edge), HAPI
 * is followed: ge = some of t is at or after the start of s, le = some of t is at or before its end.
 *   eq  t within s                 ne  t not within s
 *   gt  t ends after s             lt  t starts before s
 *   ge  t ends at or after s.lo    le  t starts at or before s.hi
 *   sa  t starts after s           eb  t ends before s
 *   ap  t overlaps s (s already widened by the caller)
 */
export function rangePredicate(sql: Sql, prefix: Prefix, s: SearchRange, t: TargetRange): Fragment {
  // `col op bound`; `unbounded` says whether a null (open) end satisfies it.
  const cmp = (col: Fragment, op: Fragment, bound: Fragment, unbounded: boolean) =>
    t.open && unbounded ? sql`(${col} is null or ${col} ${op} ${bound})` : sql`${col} ${op} ${bound}`
  const within = s.hiInclusive ? sql`<=` : sql`<`
  const beyond = s.hiInclusive ? sql`>` : sql`>=`
  switch (prefix) {
    case 'eq':
      // A row's range starts before it ends, so t within s also has each end within s: said, that bounds
      // an index range on either end from both sides (`date=2014`: one year of the date lookup or of the
      // date sort key, whichever a plan picks, not every date from 2014 on or up to 2014).
      return sql`${cmp(t.lo, sql`>=`, s.lo, false)} and ${cmp(t.lo, within, s.hi, false)} and ${cmp(t.hi, sql`>=`, s.lo, false)} and ${cmp(t.hi, within, s.hi, false)}`
    case 'ne':
      return sql`(${cmp(t.lo, sql`<`, s.lo, true)} or ${cmp(t.hi, beyond, s.hi, true)})`
    case 'gt':
      return cmp(t.hi, beyond, s.hi, true)
    case 'ge':
      return cmp(t.hi, sql`>=`, s.lo, true)
    case 'lt':
      return cmp(t.lo, sql`<`, s.lo, true)
    case 'le':
      return cmp(t.lo, within, s.hi, true)
    case 'sa':
      return cmp(t.lo, beyond, s.hi, false)
    case 'eb':
      return cmp(t.hi, sql`<`, s.lo, false)
    case 'ap':
      return sql`${cmp(t.lo, within, s.hi, true)} and ${cmp(t.hi, sql`>=`, s.lo, true)}`
  }
}

/** A decimal as written, exactly: coef × 10^-scale (`1.50` is 150 and 2, `1e2` is 1 and -2). */
export interface Decimal {
  coef: bigint
  scale: number
}

const DECIMAL_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?$/

// PostgreSQL numeric keeps at most 16383 digits after the point; far less is ever meaningful.
const MAX_SCALE = 1000

export function parseDecimal(text: string): Decimal | undefined {
  const m = DECIMAL_TEXT.exec(text)
  const frac = m?.[3] ?? ''
  if (!m || m[2] + frac === '') return undefined
  const scale = frac.length - Number(m[4] ?? 0)
  if (Math.abs(scale) > MAX_SCALE) return undefined
  return { coef: BigInt(`${m[1] === '-' ? '-' : ''}${m[2]}${frac}`), scale }
}

export function decimalText(d: Decimal): string {
  if (d.scale <= 0) return (d.coef * 10n ** BigInt(-d.scale)).toString()
  const neg = d.coef < 0n
  const digits = (neg ? -d.coef : d.coef).toString().padStart(d.scale + 1, '0')
  return `${neg ? '-' : ''}${digits.slice(0, -d.scale)}.${digits.slice(-d.scale)}`
}

function aligned(a: Decimal, b: Decimal): [bigint, bigint, number] {
  const scale = Math.max(a.scale, b.scale)
  return [a.coef * 10n ** BigInt(scale - a.scale), b.coef * 10n ** BigInt(scale - b.scale), scale]
}

const plus = (a: Decimal, b: Decimal): Decimal => {
  const [x, y, scale] = aligned(a, b)
  return { coef: x + y, scale }
}
const minus = (a: Decimal, b: Decimal): Decimal => plus(a, { coef: -b.coef, scale: b.scale })
const larger = (a: Decimal, b: Decimal): Decimal => {
  const [x, y] = aligned(a, b)
  return x >= y ? a : b
}

export interface NumberSearch {
  prefix: Prefix
  value: Decimal
}

/** `[prefix]number`; a bad prefix is HAPI-1235, as HAPI's NumberPredicateBuilder reports it. */
export function parseNumberSearch(raw: string, code: string, kind: 'number' | 'quantity' = 'number'): NumberSearch {
  const { prefix, rest, bad } = splitPrefix(raw)
  if (bad) throw invalid(`HAPI-1235: Unable to handle ${kind} prefix "${bad}" for value: ${raw}`)
  const value = parseDecimal(rest)
  if (!value) throw invalid(`Invalid ${kind} value "${raw}" for parameter ${code}`)
  return { prefix, value }
}

/**
 * The range a number search stands for, as decimal text. eq and ne: the implicit precision, half a unit
 * of the last digit either side (`100` is [99.5, 100.5), `100.0` is [99.95, 100.05), `1e2` is [50, 150)).
 * gt lt ge le sa eb: the exact value (the spec: the precision "is ignored"). ap: ±10% of the value, and
 * at least the precision. https://hl7.org/fhir/R4/search.html#number
 */
export function numberSearchRange({ prefix, value }: NumberSearch): { lo: string; hi: string; hiInclusive: boolean } {
  const half: Decimal = { coef: 5n, scale: value.scale + 1 }
  if (prefix === 'eq' || prefix === 'ne') return { lo: decimalText(minus(value, half)), hi: decimalText(plus(value, half)), hiInclusive: false }
  if (prefix === 'ap') {
    const d = larger({ coef: value.coef < 0n ? -value.coef : value.coef, scale: value.scale + 1 }, half)
    return { lo: decimalText(minus(value, d)), hi: decimalText(plus(value, d)), hiInclusive: true }
  }
  const exact = decimalText(value)
  return { lo: exact, hi: exact, hiInclusive: true }
}

/** A number search value as a predicate on a target range (a value is a range of one point). */
export function numberPredicate(sql: Sql, raw: string, code: string, target: TargetRange, kind?: 'number' | 'quantity'): Fragment {
  const search = parseNumberSearch(raw, code, kind)
  const r = numberSearchRange(search)
  return rangePredicate(sql, search.prefix, { lo: sql`${r.lo}::numeric`, hi: sql`${r.hi}::numeric`, hiInclusive: r.hiInclusive }, target)
}

/**
 * The range of a number or quantity row `i`: its value, or for a Range its two ends, a missing end
 * unbounded (±Infinity rather than an `is null or` each prefix would need: one comparison per end, so
 * that the lookup index on these expressions serves it, sql/migrations/0025_value_range_keys.sql).
 */
export function valueOrRange(sql: Sql): TargetRange {
  return { lo: sql`coalesce(i.value, i.lo, '-Infinity'::numeric)`, hi: sql`coalesce(i.value, i.hi, 'Infinity'::numeric)` }
}

// A row is its value, or for a Range its two ends (a missing end is open).
export const numberType = registerParamType<NumberRow>({
  type: 'number',
  table: 'idx_number',
  extract,
  copy: { columns: ['rid', 'res_type', 'code', 'value', 'lo', 'hi'], keys: ['rid', 'resType', 'code', 'value', 'lo', 'hi'] },
  insert: (tx, rows) =>
    tx`ins_number as (insert into idx_number (rid, res_type, code, value, lo, hi)
      select rid::bigint, res_type, code, value::numeric, lo::numeric, hi::numeric
      from ${textColumns(tx, rows, ['rid', 'resType', 'code', 'value', 'lo', 'hi'])} as x(rid, res_type, code, value, lo, hi))`,
  // A range: the likeliest to match many rows.
  driverRank: 3,
  modifiers: new Set(),
  predicate: (sql, raw, ctx) => numberPredicate(sql, unescape(raw), ctx.def.code, valueOrRange(sql)),
  sortValue: (sql, desc) => (desc ? sql`max(coalesce(i.value, i.hi))` : sql`min(coalesce(i.value, i.lo))`),
  filterOps: PREFIX_OPS,
})
