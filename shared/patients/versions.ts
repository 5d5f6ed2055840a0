// API versions (the `Version` header, a calendar date): the one list of accepted values. A key pins
// one of them at creation; a request without the header uses the key's.
// ../shared/notes/patient-api.md §8: only 2026-04-25 is documented; anything else is 400.
import { apiError } from './api-error'

export const API_VERSIONS = ['2026-04-25'] as const
export type ApiVersion = (typeof API_VERSIONS)[number]
export const LATEST_API_VERSION: ApiVersion = API_VERSIONS[API_VERSIONS.length - 1]

export function isApiVersion(v: string): v is ApiVersion {
  return (API_VERSIONS as readonly string[]).includes(v)
}

/** The version of a request: the header when present (must be accepted), else the key's pinned one. */
export function requestVersion(header: string | null | undefined, pinned: string): ApiVersion {
  const v = header?.trim()
  if (v === undefined || v === '') return isApiVersion(pinned) ? pinned : LATEST_API_VERSION
  if (!isApiVersion(v))
    throw apiError('invalid', 'unsupported_api_version', `Version '${v}' is not supported; accepted versions: ${API_VERSIONS.join(', ')}`, 'Version')
  return v
}
