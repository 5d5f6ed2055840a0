// Date parameters. Write side: each date, dateTime, instant, Period or Timing becomes the range of
// instants it covers, from its precision (`2020` is the whole year; dates without a zone are UTC), and
// the range of calendar days it covers as written (`2012-02-12T00:49:45+01:00` is the 12th, whatever
// day it is in UTC). Read side: the search value's range against the row's, by prefix: a search value
// of day, month or year precision against the calendar days, as R4 says ("time zones should not be
// considered") and HAPI does (its ordinal dates); one with a time against the instants.
// https://hl7.org/fhir/R4/search.html#date
import type { Sql } from '../../../db/client'
import { invalid } from '../../../errors'
import { unencodedPlus, unescape } from '../escape'
import { textColumns } from '../../../db/text-columns'
import { type Fragment, PREFIX_OPS, registerParamType } from './param-type'
import type { ExtractContext, TypedValue } from './typed-value'
import { type Prefix, rangePredicate, splitPrefix, type TargetRange } from './number'

export interface DateRow {
  code: string
  /** First instant covered, ISO 8601 UTC with milliseconds. */
  lo: string
  /** Last instant covered (inclusive, to the millisecond). */
  hi: string
  /** First calendar day covered as written in the resource (YYYY-MM-DD), its zone not considered. */
  loDay: string
  /** Last calendar day covered as written (inclusive). */
  hiDay: string
}

/** Sentinels for the open ends of a Period. */
export const DATE_MIN = '0001-01-01T00:00:00.000Z'
export const DATE_MAX = '9999-12-31T23:59:59.999Z'
export const DAY_MIN = '0001-01-01'
export const DAY_MAX = '9999-12-31'

type Span = Omit<DateRow, 'code'>

// https://hl7.org/fhir/R4/datatypes.html#dateTime (instant is the same with seconds and zone required)
const DATE_TIME = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/

/** The [lo, hi] range of a FHIR date, dateTime or instant (also a search value without prefix); undefined if malformed. */
export function dateRange(text: string): [string, string] | undefined {
  const m = DATE_TIME.exec(text)
  if (!m) return undefined
  const year = Number(m[1])
  if (year < 1) return undefined // FHIR's years start at 0001 (datatypes.html#date), as PostgreSQL's do
  const month = m[2] ? Number(m[2]) : undefined
  const day = m[3] ? Number(m[3]) : undefined
  if (month !== undefined && (month < 1 || month > 12)) return undefined
  if (month === undefined) return [utc(year, 0, 1), utc(year + 1, 0, 1, -1)]
  if (day === undefined) return [utc(year, month - 1, 1), utc(year, month, 1, -1)]
  if (day < 1 || day > daysIn(year, month)) return undefined
  if (m[4] === undefined) return [utc(year, month - 1, day), utc(year, month - 1, day + 1, -1)]
  const hour = Number(m[4])
  const minute = Number(m[5])
  if (hour > 23 || minute > 59) return undefined
  const offset = zoneMinutes(m[8])
  let lo = ms(year, month - 1, day, hour, minute - offset, 0, 0)
  let width: number
  if (m[6] === undefined) width = 60_000
  else {
    const second = Number(m[6])
    if (second > 60) return undefined
    const fraction = m[7] ?? ''
    const millis = fraction ? Number(fraction.slice(0, 3).padEnd(3, '0')) : 0
    lo += second * 1000 + millis
    width = fraction.length === 0 ? 1000 : fraction.length >= 3 ? 1 : 10 ** (3 - fraction.length)
  }
  return [iso(lo), iso(lo + width - 1)]
}

/**
 * The instants and the calendar days a date, dateTime or instant covers: a value with a time covers
 * the day written before its `T`; a day, month or year covers its days (the same in UTC).
 */
function span(text: string): Span | undefined {
  const r = dateRange(text)
  if (!r) return undefined
  if (text.length > 10) {
    const day = text.slice(0, 10)
    return { lo: r[0], hi: r[1], loDay: day, hiDay: day }
  }
  return { lo: r[0], hi: r[1], loDay: r[0].slice(0, 10), hiDay: r[1].slice(0, 10) }
}

export function extract(values: TypedValue[], ctx: ExtractContext): DateRow[] {
  const out: DateRow[] = []
  const push = (r: Span | undefined) => r && out.push({ code: ctx.code, lo: r.lo, hi: r.hi, loDay: r.loDay, hiDay: r.hiDay })
  for (const { type, value } of values) {
    if (typeof value === 'string') {
      if (type === 'date' || type === 'dateTime' || type === 'instant') push(span(value))
    } else if (value && typeof value === 'object') {
      if (type === 'Period') push(periodRange(value))
      else if (type === 'Timing') push(timingRange(value))
    }
  }
  return out
}

// A Period with one end open covers up to the sentinel on that side. https://hl7.org/fhir/R4/datatypes.html#Period
function periodRange(p: any): Span | undefined {
  const start = typeof p.start === 'string' ? span(p.start) : undefined
  const end = typeof p.end === 'string' ? span(p.end) : undefined
  if (!start && !end) return undefined
  return { lo: start?.lo ?? DATE_MIN, hi: end?.hi ?? DATE_MAX, loDay: start?.loDay ?? DAY_MIN, hiDay: end?.hiDay ?? DAY_MAX }
}

// Timing: from its earliest to its latest event, widened by repeat.boundsPeriod (instants and days
// each on their own: the earliest instant need not be on the earliest day as written).
// https://hl7.org/fhir/R4/datatypes.html#Timing
function timingRange(t: any): Span | undefined {
  let out: Span | undefined
  const widen = (r: Span | undefined) => {
    if (!r) return
    if (!out) out = { ...r }
    else {
      if (r.lo < out.lo) out.lo = r.lo
      if (r.hi > out.hi) out.hi = r.hi
      if (r.loDay < out.loDay) out.loDay = r.loDay
      if (r.hiDay > out.hiDay) out.hiDay = r.hiDay
    }
  }
  for (const e of t.event ?? []) if (typeof e === 'string') widen(span(e))
  if (t.repeat?.boundsPeriod) widen(periodRange(t.repeat.boundsPeriod))
  return out
}

function zoneMinutes(zone: string | undefined): number {
  if (!zone || zone === 'Z') return 0
  const sign = zone[0] === '-' ? -1 : 1
  return sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)))
}

function daysIn(year: number, month: number): number {
  return new Date(ms(year, month, 0, 0, 0, 0, 0)).getUTCDate()
}

// Date.UTC maps years 0-99 to 1900-1999; setUTCFullYear does not.
function ms(year: number, month: number, day: number, hour: number, minute: number, second: number, milli: number): number {
  const d = new Date(0)
  d.setUTCFullYear(year, month, day)
  d.setUTCHours(hour, minute, second, milli)
  return d.getTime()
}

function utc(year: number, month: number, day: number, deltaMs = 0): string {
  return iso(ms(year, month, day, 0, 0, 0, 0) + deltaMs)
}

function iso(t: number): string {
  const s = new Date(t).toISOString()
  return s.startsWith('+') || s.startsWith('-') ? (t < 0 ? DATE_MIN : DATE_MAX) : s
}

// ---------------------------------------------------------------------------------------------------
// Read side: `[prefix]date`, its range from its precision as on the write side, compared with the
// row's [lo, hi] by the shared prefix relations. https://hl7.org/fhir/R4/search.html#date

const DAY_MS = 86_400_000

export interface DateSearch {
  prefix: Prefix
  /** First and last instant of the value's precision range (inclusive, to the millisecond). */
  lo: string
  hi: string
  /** First and last calendar day (inclusive) when the value has no time: day, month or year precision. */
  days?: [string, string]
}

export function parseDateSearch(raw: string, code: string): DateSearch {
  const text = unencodedPlus(raw)
  const { prefix, rest, bad } = splitPrefix(text)
  if (bad) throw invalid(`Invalid date/time prefix "${bad}" in value "${raw}" for parameter ${code}`)
  const range = dateRange(rest)
  if (!range) throw invalid(`Invalid date/time format: "${rest}" for parameter ${code}`)
  const days: [string, string] | undefined = rest.length <= 10 ? [range[0].slice(0, 10), range[1].slice(0, 10)] : undefined
  return { prefix, lo: range[0], hi: range[1], days }
}

/**
 * The search range as [lo, hi) instants, ready to bind (`±infinity` beyond the years 0001-9999). For ap,
 * widened on both sides by 10% of the gap between now and the value (from the middle of its range),
 * and by at least a day.
 */
export function dateSearchBounds(s: DateSearch, now = Date.now()): [string, string] {
  let lo = Date.parse(s.lo)
  let hi = Date.parse(s.hi) + 1
  if (s.prefix === 'ap') {
    const d = Math.max(Math.abs(now - (lo + hi) / 2) / 10, DAY_MS)
    lo -= d
    hi += d
  }
  return [boundText(lo), boundText(hi)]
}

const FIRST = Date.parse(DATE_MIN)
const LAST = Date.parse(DATE_MAX)

function boundText(t: number): string {
  return t < FIRST ? '-infinity' : t > LAST ? 'infinity' : new Date(Math.round(t)).toISOString()
}

/**
 * A bound as a timestamptz in the statement. The infinities are written as constants: bound as
 * parameters, postgres.js's timestamptz serializer made `new Date('-infinity')` of them, an Invalid Date
 * whose toISOString threw (a 500 for `date=ge0001` or `date=9999-12-31`).
 */
function timestamptz(sql: Sql, bound: string): Fragment {
  if (bound === '-infinity') return sql`'-infinity'::timestamptz`
  if (bound === 'infinity') return sql`'infinity'::timestamptz`
  return sql`${bound}::timestamptz`
}

// The most a dateTime's zone moves its instant from its calendar day as written: zones run from -12:00 to +14:00.
const ZONE_SLACK_MS = 14 * 3_600_000

/**
 * A date search value as a predicate on a target range of timestamptz (idx_date, composite,
 * _lastUpdated). With `days` (the target's calendar days as written), a value of day, month or year
 * precision compares with those days; the instants then only narrow the rows to read (an index range
 * on idx_date_lookup): the same relation on the search range widened or narrowed by the largest zone
 * offset, which every row meeting the day relation meets.
 */
export function datePredicate(sql: Sql, raw: string, code: string, target: TargetRange, days?: TargetRange): Fragment {
  const s = parseDateSearch(raw, code)
  const [lo, hi] = dateSearchBounds(s)
  if (!days || !s.days || s.prefix === 'ap')
    return rangePredicate(sql, s.prefix, { lo: timestamptz(sql, lo), hi: timestamptz(sql, hi), hiInclusive: false }, target)
  const exact = rangePredicate(sql, s.prefix, { lo: sql`${s.days[0]}::date`, hi: sql`${s.days[1]}::date`, hiInclusive: true }, days)
  // eq, ge, le (and ap) hold on more rows as the search range grows; the others as it shrinks.
  const slack = s.prefix === 'eq' || s.prefix === 'ge' || s.prefix === 'le' ? ZONE_SLACK_MS : -ZONE_SLACK_MS
  const near = [boundText(Date.parse(s.lo) - slack), boundText(Date.parse(s.hi) + 1 + slack)]
  const hint = rangePredicate(sql, s.prefix, { lo: timestamptz(sql, near[0]), hi: timestamptz(sql, near[1]), hiInclusive: false }, target)
  return sql`${exact} and ${hint}`
}

export const dateType = registerParamType<DateRow>({
  type: 'date',
  table: 'idx_date',
  extract,
  copy: { columns: ['rid', 'res_type', 'code', 'lo', 'hi', 'lo_day', 'hi_day'], keys: ['rid', 'resType', 'code', 'lo', 'hi', 'loDay', 'hiDay'] },
  insert: (tx, rows) =>
    tx`ins_date as (insert into idx_date (rid, res_type, code, lo, hi, lo_day, hi_day)
      select rid::bigint, res_type, code, lo::timestamptz, hi::timestamptz, lo_day::date, hi_day::date
      from ${textColumns(tx, rows, ['rid', 'resType', 'code', 'lo', 'hi', 'loDay', 'hiDay'])} as x(rid, res_type, code, lo, hi, lo_day, hi_day))`,
  // A range: the likeliest to match many rows.
  driverRank: 3,
  modifiers: new Set(),
  predicate: (sql, raw, ctx) => datePredicate(sql, unescape(raw), ctx.def.code, { lo: sql`i.lo`, hi: sql`i.hi` }, { lo: sql`i.lo_day`, hi: sql`i.hi_day` }),
  sortValue: (sql, desc) => (desc ? sql`max(i.hi)` : sql`min(i.lo)`),
  filterOps: PREFIX_OPS,
})
