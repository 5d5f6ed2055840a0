// The step shared by create, update, patch and delete: turn a resource into the next stored version of
// (type, id) and write it, inside the caller's transaction.
import type { WriteTx } from '../repo/repo'
import type { NewVersion, StoredVersion } from '../repo/types'
import { sameContent, withServerMeta } from '../resource-meta'
import { parseFhirJson } from '../format/json'

export type StoreResult = { stored: StoredVersion; changed: boolean; created: boolean }

/**
 * Writes `resource` as the version after `current` (or as version 1 with `rid` when there is none).
 * An update whose content equals the current version writes nothing and returns the current version.
 */
export async function storeVersion(
  w: WriteTx,
  type: string,
  id: string,
  resource: any,
  current: StoredVersion | undefined,
  rid?: string,
): Promise<StoreResult> {
  const live = current && !current.deleted ? parseFhirJson(current.content as string) : undefined
  const row = newVersion(current?.rid ?? (rid as string), type, id, current ? current.version + 1 : 1, resource, new Date(), live?.meta)
  if (live && sameContent(row.resource, live)) return { stored: current as StoredVersion, changed: false, created: false }
  await w.write([row], current ? new Set([row.rid]) : new Set())
  return { stored: row, changed: true, created: !live }
}

/** `resource` as version `version` of (type, id): server meta set, serialised once. */
export function newVersion(rid: string, type: string, id: string, version: number, resource: any, now: Date, previousMeta?: any): NewVersion {
  const stored = withServerMeta(resource, id, version, now, previousMeta)
  return { rid, type, id, version, lastUpdated: now, deleted: false, content: JSON.stringify(stored), resource: stored }
}

/** Writes a deletion (a new version with no content) after `current`. */
export async function storeDeletion(w: WriteTx, current: StoredVersion): Promise<StoredVersion> {
  const row: NewVersion = {
    rid: current.rid,
    type: current.type,
    id: current.id,
    version: current.version + 1,
    lastUpdated: new Date(),
    deleted: true,
    content: null,
  }
  await w.write([row], new Set([row.rid]))
  return row
}

/** Parses `W/"3"` (or `"3"`, `3`) from If-Match. */
export function parseIfMatch(value: string | undefined): number | undefined {
  if (!value) return undefined
  const m = /^\s*(?:W\/)?"?(\d+)"?\s*$/.exec(value)
  return m ? Number(m[1]) : Number.NaN
}
