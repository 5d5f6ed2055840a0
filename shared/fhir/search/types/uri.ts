// Uri parameters, write side: uri, url, canonical, oid and uuid values (and meta.profile, meta.source)
// as written; :above and :below compare prefixes on the read side. https://hl7.org/fhir/R4/search.html#uri
import { unescape } from '../escape'
import type { ParamHandler } from './param-type'
import type { ExtractContext, TypedValue } from '../typed-value'

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
export const uriHandler: ParamHandler = {
  table: 'idx_uri',
  modifiers: new Set(['above', 'below']),
  predicate(sql, raw, ctx) {
    const value = unescape(raw)
    if (ctx.modifier === 'above') return sql`starts_with(${value}, i.value)`
    if (ctx.modifier === 'below') return sql`starts_with(i.value, ${value})`
    return sql`i.value = ${value}`
  },
  sortValue: (sql, desc) => (desc ? sql`max(i.value)` : sql`min(i.value)`),
}
