// The errors of reading and writing stored resources, one builder per HAPI code, so that every
// surface (HTTP, Bundle entries, operations) raises each code with the same words and category.
// HAPI 7.0: BaseHapiFhirResourceDao, BaseStorageResourceDao (shared/notes/hapi-behaviour.md §1).
import { AppError } from '../errors'

/** 404 HAPI-2001: the id was never used (or its resource was expunged). */
export function unknownResource(type: string, id: string): AppError {
  return new AppError('not-found', `HAPI-2001: Resource ${type}/${id} is not known`)
}

/**
 * 410: the current version is a deletion; the response names it (ETag, Last-Modified). HAPI's words carry
 * no HAPI-NNNN code (BaseStorageDao.createResourceGoneException).
 */
export function deletedResource(deletion: { version: number; lastUpdated: Date }): AppError {
  return new AppError('gone', `Resource was deleted at ${deletion.lastUpdated.toISOString()}`, {
    details: { etag: `W/"${deletion.version}"`, lastModified: deletion.lastUpdated },
  })
}

/** The current version of (type, id) when it is live: 404 (HAPI-2001) when there is none, 410 for a deletion. */
export function liveVersion<V extends { version: number; lastUpdated: Date; deleted: boolean }>(stored: V | undefined, type: string, id: string): V {
  if (!stored) throw unknownResource(type, id)
  if (stored.deleted) throw deletedResource(stored)
  return stored
}

/** 404 HAPI-0978: a version id that is not a number, of a resource that exists (BaseHapiFhirResourceDao.readEntity). */
export function invalidVersion(type: string, id: string, version: string): AppError {
  return new AppError('not-found', `HAPI-0978: Version "${version}" is not valid for resource ${type}/${id}`)
}

/** 404 HAPI-0979: the resource exists, this version of it does not. */
export function unknownVersion(type: string, id: string, version: string): AppError {
  return new AppError('not-found', `HAPI-0979: Version "${version}" is not valid for resource ${type}/${id}`)
}

const CONFLICT_CODES = { update: 'HAPI-0989', patch: 'HAPI-0974', delete: 'HAPI-0961' } as const

/** 409 (HAPI answers 409 here, not 412): If-Match named a version that is not the current one. */
export function versionConflict(op: keyof typeof CONFLICT_CODES, type: string, id: string, expected: number): AppError {
  return new AppError('conflict', `${CONFLICT_CODES[op]}: Trying to ${op} ${type}/${id}/_history/${expected} but this is not the current version`)
}

/** 400 HAPI-0419: PUT /{type}/{id} with a body that has no id. */
export function missingBodyId(): AppError {
  return new AppError('invalid', 'HAPI-0419: Can not update resource, resource body must contain an ID element for update (PUT) operation')
}

/** 400 HAPI-0420: the body's id is not the one in the URL. */
export function bodyIdMismatch(bodyId: string, urlId: string): AppError {
  return new AppError(
    'invalid',
    `HAPI-0420: Can not update resource, resource body must contain an ID element which matches the request URL for update (PUT) operation - Resource body ID of "${bodyId}" does not match URL ID of "${urlId}"`,
  )
}

/** 400: If-Match that is not an ETag of a version (`W/"3"`, `"3"` or `3`). */
export function invalidIfMatch(value: string): AppError {
  return new AppError('invalid', `Invalid If-Match header value: ${value}`)
}
