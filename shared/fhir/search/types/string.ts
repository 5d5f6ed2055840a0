// String parameters, write side: each string selected (names and addresses split into their parts)
// becomes a row with HAPI's normalised form for the default starts-with match and the exact form for :exact.
// https://hl7.org/fhir/R4/search.html#string
import { invalid } from '../../../errors'
import { unescape } from '../escape'
import type { Sql } from '../../../db/client'
import { textColumns } from '../../../db/text-columns'
import { type FilterOp, type Fragment, registerParamType } from './param-type'
import type { ExtractContext, TypedValue } from './typed-value'

export interface StringRow {
  code: string
  /** Upper-cased, diacritics removed, at most 200 characters. */
  value_norm: string
  /** As written, at most 200 characters. */
  value_exact: string
}

// HAPI ResourceIndexedSearchParamString.MAX_LENGTH: both columns are cut to 200 characters.
export const STRING_MAX_LENGTH = 200

// Any UTF-16 unit beyond ASCII (surrogates included).
const NON_ASCII = /[\u0080-\uffff]/

/**
 * HAPI's StringUtil.normalizeStringForSearchIndexing: NFD, drop non-spacing marks, upper-case. The
 * read side normalises search values with the same function.
 */
export function normalizeString(s: string): string {
  // ASCII text has no decomposition and no marks (most of what is indexed): only upper-cased, once cut
  // (the same characters: a name of 15 MB was upper-cased whole for its first 200 characters).
  if (!NON_ASCII.test(s)) return s.slice(0, STRING_MAX_LENGTH).toUpperCase()
  return s
    .normalize('NFD')
    .replace(/\p{Mn}/gu, '')
    .toUpperCase()
    .slice(0, STRING_MAX_LENGTH)
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

/**
 * `col` starts with `prefix`, as the range [prefix, successor) in code point order, which is the byte
 * order of text_pattern_ops indexes. Unlike a LIKE, the range can use the index in a generic plan, so
 * a prepared search is planned once, not for each value.
 */
export function startsWith(sql: Sql, col: Fragment, prefix: string): Fragment {
  if (prefix === '') return sql`${col} is not null`
  // The bounds are sub-selects so that no plan depends on their values: the custom plans PostgreSQL
  // tries first then cost what the generic plan does, and it keeps the generic one (no planning per search).
  const upper = successor(prefix)
  const from = sql`${col} ~>=~ (select ${prefix}::text)`
  return upper === undefined ? from : sql`${from} and ${col} ~<~ (select ${upper}::text)`
}

// The least string greater than every string that starts with `s`: its last code point incremented
// (skipping the surrogate range), dropping trailing U+10FFFF; undefined when there is none.
function successor(s: string): string | undefined {
  const cps = [...s]
  while (cps.length > 0) {
    const last = (cps.pop() as string).codePointAt(0) as number
    if (last < 0x10ffff) return cps.join('') + String.fromCodePoint(last + 1 === 0xd800 ? 0xe000 : last + 1)
  }
  return undefined
}

/** The `_filter` operators of a text (string, uri). */
export const TEXT_OPS: readonly FilterOp[] = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le']

// Read side: starts-with on the normalised value (case- and accent-insensitive), :exact, :contains.
// https://hl7.org/fhir/R4/search.html#string
export const stringType = registerParamType<StringRow>({
  type: 'string',
  table: 'idx_string',
  extract,
  copy: { columns: ['rid', 'res_type', 'code', 'value_norm', 'value_exact'], keys: ['rid', 'resType', 'code', 'value_norm', 'value_exact'] },
  insert: (tx, rows) =>
    tx`ins_string as (insert into idx_string (rid, res_type, code, value_norm, value_exact)
      select rid::bigint, res_type, code, value_norm, value_exact
      from ${textColumns(tx, rows, ['rid', 'resType', 'code', 'value_norm', 'value_exact'])} as x(rid, res_type, code, value_norm, value_exact))`,
  // A string names fewer resources than a range, more than a reference or a code.
  driverRank: 2,
  modifiers: new Set(['exact', 'contains']),
  predicate(sql, raw, ctx) {
    const value = unescape(raw)
    if (ctx.modifier === 'exact') return sql`i.value_exact = ${value.slice(0, STRING_MAX_LENGTH)}`
    const norm = normalizeString(value)
    if (ctx.modifier === 'contains') return sql`i.value_norm like ${`%${escapeLike(norm)}%`}`
    return startsWith(sql, sql`i.value_norm`, norm)
  },
  sortValue: (sql, desc) => (desc ? sql`max(i.value_norm)` : sql`min(i.value_norm)`),
  filterOps: TEXT_OPS,
  // On the normalised value (case- and accent-insensitive), as HAPI: eq is equality, not starts-with.
  compare(sql, op, value, ctx, h) {
    if (op === 'sw') return h.predicate(sql, value, { ...ctx, modifier: undefined })
    if (op === 'co') return h.predicate(sql, value, { ...ctx, modifier: 'contains' })
    const norm = normalizeString(unescape(value))
    if (op === 'ew') return sql`i.value_norm like ${`%${escapeLike(norm)}`}`
    return orderedText(sql, sql`i.value_norm`, op, norm)
  },
})

/** A `_filter` equality or order comparison of a text column. */
export function orderedText(sql: Sql, column: Fragment, op: FilterOp, value: string): Fragment {
  switch (op) {
    case 'eq':
      return sql`${column} = ${value}`
    case 'ne':
      return sql`${column} <> ${value}`
    case 'gt':
      return sql`${column} > ${value}`
    case 'lt':
      return sql`${column} < ${value}`
    case 'ge':
      return sql`${column} >= ${value}`
    case 'le':
      return sql`${column} <= ${value}`
    default:
      throw invalid(`Operator "${op}" can not be used in _filter on a text value`)
  }
}
