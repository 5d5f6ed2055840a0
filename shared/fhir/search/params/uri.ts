// Uri parameters, write side: uri, url, canonical, oid and uuid values (and meta.profile, meta.source)
// as written; :above and :below compare prefixes on the read side. https://hl7.org/fhir/R4/search.html#uri
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
