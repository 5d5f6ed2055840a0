// String parameters, write side: each string selected (names and addresses split into their parts)
// becomes a row with HAPI's normalised form for the default starts-with match and the exact form for :exact.
// https://hl7.org/fhir/R4/search.html#string
import { unescape } from '../escape'
import type { ParamHandler } from '../param-handler'
import type { ExtractContext, TypedValue } from '../typed-value'

export interface StringRow {
  code: string
  /** Upper-cased, diacritics removed, at most 200 characters. */
  value_norm: string
  /** As written, at most 200 characters. */
  value_exact: string
}

// HAPI ResourceIndexedSearchParamString.MAX_LENGTH: both columns are cut to 200 characters.
export const STRING_MAX_LENGTH = 200

/**
 * HAPI's StringUtil.normalizeStringForSearchIndexing: NFD, drop non-spacing marks, upper-case. The
 * read side normalises search values with the same function.
 */
export function normalizeString(s: string): string {
  return s.normalize('NFD').replace(/\p{Mn}/gu, '').toUpperCase().slice(0, STRING_MAX_LENGTH)
}

const NAME_PARTS = ['text', 'family', 'given', 'prefix', 'suffix']
const ADDRESS_PARTS = ['text', 'line', 'city', 'district', 'state', 'postalCode', 'country']

export function extract(values: TypedValue[], ctx: ExtractContext): StringRow[] {
  const out: StringRow[] = []
  const add = (s: unknown) => {
    if (typeof s !== 'string' || s.trim() === '') return
    out.push({ code: ctx.code, value_norm: normalizeString(s), value_exact: s.slice(0, STRING_MAX_LENGTH) })
  }
  const addParts = (o: any, parts: string[]) => {
    for (const p of parts) {
      const v = o[p]
      if (Array.isArray(v)) for (const s of v) add(s)
      else add(v)
    }
  }
  for (const { type, value } of values) {
    if (typeof value === 'string') add(value)
    else if (type === 'HumanName' && value) addParts(value, NAME_PARTS)
    else if (type === 'Address' && value) addParts(value, ADDRESS_PARTS)
  }
  return out
}

/** `s` as a LIKE pattern matching values that start with it (LIKE's own wildcards escaped). */
export function likePrefix(s: string): string {
  return `${escapeLike(s)}%`
}

export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`)
}

// Read side: starts-with on the normalised value (case- and accent-insensitive), :exact, :contains.
// https://hl7.org/fhir/R4/search.html#string
export const stringHandler: ParamHandler = {
  table: 'idx_string',
  modifiers: new Set(['exact', 'contains']),
  predicate(sql, raw, ctx) {
    const value = unescape(raw)
    if (ctx.modifier === 'exact') return sql`i.value_exact = ${value.slice(0, STRING_MAX_LENGTH)}`
    const norm = normalizeString(value)
    if (ctx.modifier === 'contains') return sql`i.value_norm like ${`%${escapeLike(norm)}%`}`
    return sql`i.value_norm like ${likePrefix(norm)}`
  },
  sortValue: (sql, desc) => (desc ? sql`max(i.value_norm)` : sql`min(i.value_norm)`),
}
