// The step every write shares, in two halves. Planning (no I/O): a request and the current version of
// (type, id) come to a WritePlan, the version to store or nothing, and what happened. Applying: the
// plan's version written in the caller's transaction. An HTTP interaction applies its one plan; a
// transaction Bundle plans each entry with the same functions (create.ts, update.ts, patch.ts,
// delete.ts) and writes all the versions at once.
import type { WriteTx } from '../repo/repo'
import type { NewVersion, StoredVersion } from '../repo/types'
import { sameContent, withServerMeta } from '../resource-meta'
import { parseFhirJson } from '../format/json'

/** What a create, update or patch of one resource comes to. */
export type VersionPlan =
  /** A version to store: of a new resource, or after `replaces`, the current row it supersedes. */
  | { outcome: 'created' | 'updated'; version: NewVersion; replaces?: StoredVersion }
  /** Nothing to store: the content equals that of `current` (meta.versionId and lastUpdated aside). */
  | { outcome: 'unchanged'; current: StoredVersion }

/** What a delete comes to: the deletion of `replaces`, or nothing when there is nothing to delete. */
export type DeletePlan =
  | { outcome: 'deleted'; version: NewVersion; replaces: StoredVersion }
  | { outcome: 'not-found' }
  | { outcome: 'already-deleted'; current: StoredVersion }

export type WritePlan = VersionPlan | DeletePlan

/**
 * `resource` as the version after `current`, or as version 1 of a new resource (`rid`; empty when the
 * repository is to assign one as it writes). Tags and security labels of a live current version carry
 * over; content equal to it plans nothing.
 */
export function nextVersion(type: string, id: string, resource: any, current: StoredVersion | undefined, rid: string, now: Date): VersionPlan {
  const live = current && !current.deleted ? parseFhirJson(current.content as string) : undefined
  const version = newVersion(current?.rid ?? rid, type, id, current ? current.version + 1 : 1, resource, now, live?.meta)
  if (live && sameContent(version.resource, live)) return { outcome: 'unchanged', current: current as StoredVersion }
  return { outcome: live ? 'updated' : 'created', version, replaces: current }
}

/** `resource` as version `version` of (type, id): server meta set, serialised once. */
export function newVersion(rid: string, type: string, id: string, version: number, resource: any, now: Date, previousMeta?: any): NewVersion {
  const stored = withServerMeta(resource, id, version, now, previousMeta)
  return { rid, type, id, version, lastUpdated: now, deleted: false, content: JSON.stringify(stored), resource: stored }
}

/** The deletion of `current`: a new version with no content. */
export function deletionOf(current: StoredVersion, now: Date): NewVersion {
  return { rid: current.rid, type: current.type, id: current.id, version: current.version + 1, lastUpdated: now, deleted: true, content: null }
}

/** Writes the plan's version, if it has one, in `w`. */
export async function applyPlan(w: WriteTx, plan: WritePlan): Promise<void> {
  if ('version' in plan) await w.write([plan.version], plan.replaces ? new Set([plan.version.rid]) : new Set())
}

export type StoreResult = { stored: StoredVersion; changed: boolean; created: boolean }

/** Plans and writes `resource` as the next version of (type, id) in one go. */
export async function storeVersion(
  w: WriteTx,
  type: string,
  id: string,
  resource: any,
  current: StoredVersion | undefined,
  rid?: string,
): Promise<StoreResult> {
  const plan = nextVersion(type, id, resource, current, rid ?? '', new Date())
  await applyPlan(w, plan)
  return planResult(plan)
}

/** An applied plan as its answer needs it: the version now current, whether it is new, whether it was created. */
export function planResult(plan: VersionPlan): StoreResult {
  if (plan.outcome === 'unchanged') return { stored: plan.current, changed: false, created: false }
  return { stored: plan.version, changed: true, created: plan.outcome === 'created' }
}

/** Parses `W/"3"` (or `"3"`, `3`) from If-Match; NaN when it is something else. */
export function parseIfMatch(value: string | undefined): number | undefined {
  if (!value) return undefined
  const m = /^\s*(?:W\/)?"?(\d+)"?\s*$/.exec(value)
  return m ? Number(m[1]) : Number.NaN
}
