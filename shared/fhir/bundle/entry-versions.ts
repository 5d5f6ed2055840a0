// The third step of a transaction: each entry planned, in HAPI's order, by the same plan functions the
// HTTP interactions use (create.ts, update.ts, patch.ts, delete.ts), against the version current for
// it at that point of the Bundle (stored, or written by an earlier entry), and answered.
import { planCreate } from '../interactions/create'
import { planDelete } from '../interactions/delete'
import { planPatch } from '../interactions/patch'
import { parseIfMatch, type WritePlan } from '../interactions/store-version'
import { planUpdate } from '../interactions/update'
import type { NewVersion, StoredVersion } from '../repo/types'
import type { Planned } from './identities'
import { type EntryResult, entryEtag, inEntrySync, writeResult } from './results'

export interface EntryVersions {
  /** Every version to write, one per resource (a resource written twice keeps its last version). */
  versions: NewVersion[]
  /** rids whose stored current version these replace. */
  supersedes: Set<string>
  /** The response of each entry, by entry index. */
  results: Map<number, EntryResult>
}

/** `stored`: the current versions, as locked, of what the entries update, patch or delete. */
export function planVersions(plans: Planned[], stored: Map<string, StoredVersion>, preferRepresentation: boolean, now: Date): EntryVersions {
  const out: EntryVersions = { versions: [], supersedes: new Set(), results: new Map() }
  const written = new Map<string, number>() // Type/id -> its position in out.versions
  const latest = new Map<string, StoredVersion>() // Type/id -> current at this point of the Bundle
  for (const p of plans) {
    const key = `${p.type}/${p.id}`
    const current = latest.get(key) ?? stored.get(key)
    const plan = inEntrySync(p.entry, () => planEntry(p, current, now))
    out.results.set(p.entry.index, plan ? answer(p, plan, preferRepresentation) : noop(p, latest.get(key), preferRepresentation))
    if (!plan || !('version' in plan)) continue
    const v = plan.version
    if (p.action !== 'patch') v.references = p.references // a patch's references are those of its patch body
    // A resource written twice in the Bundle: the later version takes the earlier one's place.
    const earlier = written.get(key)
    if (earlier !== undefined) out.versions[earlier] = v
    else {
      written.set(key, out.versions.length)
      out.versions.push(v)
      if (stored.has(key)) out.supersedes.add(v.rid)
    }
    latest.set(key, v)
  }
  // Each entry about a resource the Bundle writes answers with the version finally stored (a conditional
  // create that a later PUT updates names version 2, the one that exists), as HAPI's
  // BaseTransactionProcessor does ("reflect the actual final version for the resource").
  for (const p of plans) {
    const r = out.results.get(p.entry.index)
    const at = written.get(`${p.type}/${p.id}`)
    if (!r?.location || at === undefined || out.versions[at].deleted) continue
    const v = out.versions[at]
    r.location = `${v.type}/${v.id}/_history/${v.version}`
    r.etag = entryEtag(v.version)
    r.lastModified = v.lastUpdated.toISOString()
  }
  return out
}

function planEntry(p: Planned, current: StoredVersion | undefined, now: Date): WritePlan | undefined {
  const { type, id } = p
  const ifMatch = parseIfMatch(p.entry.ifMatch)
  switch (p.action) {
    case 'noop':
      return undefined
    case 'create':
      return planCreate(type, p.rid as string, p.resource, now)
    case 'update':
      return planUpdate({ type, id, resource: p.resource, ifMatch, serverAssignedId: p.serverId, createsFor: p.createsFor }, current, p.rid ?? '', now)
    case 'patch':
      return planPatch({ type, id, isJsonPatch: Array.isArray(p.entry.resource), body: p.entry.resource, ifMatch }, current, now)
    case 'delete':
      return planDelete({ type, id, ifMatch }, current, now)
  }
}

function answer(p: Planned, plan: WritePlan, preferRepresentation: boolean): EntryResult {
  switch (plan.outcome) {
    case 'created':
      return writeResult('201 Created', plan.version, preferRepresentation, p.action === 'create' ? 'SUCCESSFUL_CREATE' : 'SUCCESSFUL_UPDATE_AS_CREATE')
    case 'updated':
      return writeResult('200 OK', plan.version, preferRepresentation, p.action === 'patch' ? 'SUCCESSFUL_PATCH' : 'SUCCESSFUL_UPDATE')
    case 'unchanged':
      return writeResult('200 OK', plan.current, preferRepresentation, p.action === 'patch' ? 'SUCCESSFUL_PATCH_NO_CHANGE' : 'SUCCESSFUL_UPDATE_NO_CHANGE')
    case 'deleted':
      return { status: '204 No Content', etag: entryEtag(plan.version.version) }
    default:
      return { status: '204 No Content' }
  }
}

/** A conditional create that matched (or repeats one of this Bundle), or a conditional delete that matched nothing. */
function noop(p: Planned, latest: StoredVersion | undefined, preferRepresentation: boolean): EntryResult {
  const same = p.existing ?? (p.aliasOf ? latest : undefined)
  return same ? writeResult('200 OK', same, preferRepresentation, 'SUCCESSFUL_CREATE_WITH_CONDITIONAL_MATCH') : { status: '204 No Content' }
}
