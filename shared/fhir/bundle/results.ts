// Bundle.entry.response of a transaction or batch, and errors that name their entry.
// https://hl7.org/fhir/R4/bundle-definitions.html#Bundle.entry.response
import { AppError } from '../../errors'
import { type StorageCode, storageOutcome, toAppError } from '../outcome'
import type { StoredVersion } from '../repo/types'
import type { BundleEntry } from './entries'
import { parseFhirJson } from '../format/json'

export interface EntryResult {
  status: string
  location?: string
  etag?: string
  lastModified?: string
  resource?: any
  /** The resource as JSON text (GET entries: as read, never parsed). */
  resourceText?: string
  outcome?: any
}

/** The response of a write entry; the resource only when `Prefer: return=representation` asked (HAPI). */
export function writeResult(status: string, v: StoredVersion, withResource: boolean, code: StorageCode): EntryResult {
  const out: EntryResult = {
    status,
    location: `${v.type}/${v.id}/_history/${v.version}`,
    etag: entryEtag(v.version),
    lastModified: v.lastUpdated.toISOString(),
    outcome: storageOutcome(
      code,
      `${code === 'SUCCESSFUL_CREATE_WITH_CONDITIONAL_MATCH' ? 'Existing resource' : 'Resource'} "${v.type}/${v.id}/_history/${v.version}"`,
    ),
  }
  if (withResource && v.content) out.resource = parseFhirJson(v.content)
  return out
}

/**
 * Bundle.entry.response.etag: the bare version id (`"1"`), not the `W/"1"` of the ETag header (HAPI:
 * BaseTransactionProcessor sets it from IIdType.getVersionIdPart()). A header ETag given is reduced to it.
 */
export function entryEtag(version: number | string): string {
  return String(version).replace(/^W\/"(.*)"$/, '$1')
}

/** The error of an entry, its message naming the entry (HAPI: "Transaction bundle entry N ..."). */
export function entryError(e: BundleEntry, err: unknown): AppError {
  const appErr = toAppError(err)
  if (appErr.details.entryIndex !== undefined || appErr.category === 'fault') return appErr
  const prefix = `Bundle.entry[${e.index}] (${e.method} ${e.url}): `
  return new AppError(appErr.category, prefix + appErr.message, {
    issues: (appErr.issues.length ? appErr.issues : [{ severity: 'error' as const, code: 'processing', diagnostics: appErr.message }]).map((i) => ({
      ...i,
      diagnostics: prefix + i.diagnostics,
      expression: i.expression?.map((x) => `Bundle.entry[${e.index}].resource.${x.slice(x.indexOf('.') + 1)}`),
    })),
    details: { ...appErr.details, entryIndex: e.index },
  })
}

/** Runs `fn` for entry `e`: what it throws names the entry. */
export function inEntrySync<T>(e: BundleEntry, fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    throw entryError(e, err)
  }
}

/** As inEntrySync, for work that awaits. */
export async function inEntry<T>(e: BundleEntry, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw entryError(e, err)
  }
}

const REASONS: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  304: 'Not Modified',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  500: 'Internal Server Error',
}

export function statusText(status: number): string {
  return `${status} ${REASONS[status] ?? ''}`.trim()
}
