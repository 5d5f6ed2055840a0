// Uri parameters, write side: uri, url, canonical, oid and uuid values (and meta.profile, meta.source)
// as written; :above and :below compare prefixes on the read side. https://hl7.org/fhir/R4/search.html#uri
import { unescape } from '../escape'
import { textColumns } from '../../../db/text-columns'
import { registerParamType } from './param-type'
import { escapeLike, orderedText, TEXT_OPS } from './string'
import type { ExtractContext, TypedValue } from './typed-value'

export interface UriRow {
  code: string
  value: string
}

export function extract(values: TypedValue[], ctx: ExtractContext): UriRow[] {
  const out: UriRow[] = []
  for (const { value } of values) if (typeof value === 'string' && value !== '') out.push({ code: ctx.code, value })
  return out
}

// Read side: exact match; :above (the stored URL is a prefix of the value), :below (the value is a
// prefix of the stored URL). https://hl7.org/fhir/R4/search.html#uri
export const uriType = registerParamType<UriRow>({
  type: 'uri',
  table: 'idx_uri',
  extract,
  copy: { columns: ['rid', 'res_type', 'code', 'value'], keys: ['rid', 'resType', 'code', 'value'] },
  insert: (tx, rows) =>
    tx`ins_uri as (insert into idx_uri (rid, res_type, code, value)
      select rid::bigint, res_type, code, value
      from ${textColumns(tx, rows, ['rid', 'resType', 'code', 'value'])} as x(rid, res_type, code, value))`,
  // As a string.
  driverRank: 2,
  modifiers: new Set(['above', 'below']),
  predicate(sql, raw, ctx) {
    const value = unescape(raw)
    if (ctx.modifier === 'above') return sql`starts_with(${value}, i.value)`
    if (ctx.modifier === 'below') return sql`starts_with(i.value, ${value})`
    return sql`i.value = ${value}`
  },
  sortValue: (sql, desc) => (desc ? sql`max(i.value)` : sql`min(i.value)`),
  filterOps: TEXT_OPS,
  // On the URI as written, as HAPI.
  compare(sql, op, raw) {
    const value = unescape(raw)
    if (op === 'co') return sql`i.value like ${`%${escapeLike(value)}%`}`
    if (op === 'sw') return sql`i.value like ${`${escapeLike(value)}%`}`
    if (op === 'ew') return sql`i.value like ${`%${escapeLike(value)}`}`
    return orderedText(sql, sql`i.value`, op, value)
  },
})
