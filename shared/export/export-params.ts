// The filters both export surfaces take: `_type` (comma-separated resource types, repeatable) and
// `_since` (an ISO 8601 date or timestamp: resources last updated at or after it). A bad value is an
// invalid-request error naming the parameter (`details.param`; `details.code` for the patient API's envelope).
import { AppError } from '../errors'
import { isResourceType } from '../fhir/definitions/resource-types'
import { unencodedPlus } from '../fhir/search/escape'
import { dateRange } from '../fhir/search/types/date'

export function parseTypes(values: string[]): string[] | undefined {
  const types = values.flatMap((v) => v.split(',')).map((t) => t.trim())
  if (types.length === 0) return undefined
  for (const t of types) {
    if (!isResourceType(t)) throw new AppError('invalid', `Unknown resource type "${t}" in _type`, { details: { param: '_type', code: 'invalid_data' } })
  }
  return [...new Set(types)].sort()
}

/** The first instant `_since` covers (a date means its first moment, UTC when no zone is given). */
export function parseSince(value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  const range = dateRange(unencodedPlus(value.trim()))
  if (!range)
    throw new AppError('invalid', `Invalid _since value "${value}": expected an ISO 8601 date or timestamp`, {
      details: { param: '_since', code: 'invalid_data' },
    })
  return range[0]
}

/** The filters as query parameters for the links of later pages. */
export function filterParams(filters: Record<string, string | string[] | undefined>): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(filters)) {
    if (v === undefined) continue
    for (const x of Array.isArray(v) ? v : [v]) q.append(k, x)
  }
  return q.toString()
}
