// A transaction Bundle in one database transaction, all or nothing, written set-wise: every identity
// (placeholder ids, conditional creates/updates/deletes, conditional references) is resolved first,
// then all versions and their index rows go in with multi-row statements. GET entries run after the
// commit, as HAPI does. https://hl7.org/fhir/R4/http.html#transaction
import { AppError } from '../../errors'
import { assertClientId } from '../ids'
import { newVersion, parseIfMatch } from '../interactions/store-version'
import { applyFhirPatch } from '../patch/fhir-patch'
import { applyJsonPatch } from '../patch/json-patch'
import type { WriteTx } from '../repo/repo'
import type { NewVersion, StoredVersion } from '../repo/types'
import type { FhirContext } from '../request'
import { sameContent } from '../resource-meta'
import { assertMatchesOwnUrl, type ConditionalMatch, resolveConditional } from '../search/conditional'
import { assertValid } from '../validate/validate'
import { type BundleEntry, VERB_ORDER } from './entries'
import { localMatches } from './local-match'
import { findReferences, type FoundReference } from '../references'
import { isConditionalReference, rewriteReferences } from './references'
import { type EntryResult, entryError, writeResult } from './results'
import { parseFhirJson } from '../format/json'

interface Planned {
  entry: BundleEntry
  /** What the entry does once resolved. */
  action: 'create' | 'update' | 'patch' | 'delete' | 'noop'
  type: string
  id: string
  rid?: string
  resource?: any
  /** For a conditional create that matched, or a conditional delete with no match. */
  existing?: StoredVersion
  /** A duplicate conditional create of this bundle: it answers as the entry it repeats. */
  aliasOf?: Planned
  /** The conditional create's match, checked against the created resource after the write. */
  match?: ConditionalMatch
  /** The id was assigned by the server (not subject to the client-id rules). */
  serverId?: boolean
  /** The `reference` values of `resource` once rewritten (a PATCH's are those of its patch body). */
  references?: FoundReference[]
}

/**
 * Writes the non-GET entries of a transaction; returns their results by entry index. With a `jobId`, the
 * results are recorded in the same database transaction, and a second run of the same job returns them
 * without writing again (a retried job is never applied twice: should two attempts race, the second's
 * record collides with the first's key and its transaction rolls back).
 */
export async function writeTransaction(
  ctx: FhirContext,
  entries: BundleEntry[],
  preferRepresentation: boolean,
  jobId?: string,
): Promise<Map<number, EntryResult>> {
  const writes = entries
    .filter((e) => e.method !== 'GET' && e.method !== 'HEAD')
    .sort((a, b) => VERB_ORDER[a.method] - VERB_ORDER[b.method] || a.index - b.index)
  // Asked of the database while the entries are checked, rather than one after the other inside the
  // transaction: a retried job's recorded results, and ids for the creates.
  const recorded = jobId ? recordedResults(ctx, jobId) : Promise.resolve(undefined)
  const creates = writes.filter((e) => e.method === 'POST').length
  const rids = creates > 0 ? ctx.repo.ids.allocate(creates) : Promise.resolve([])
  try {
    for (const e of writes) if (e.resource && e.method !== 'PATCH') guard(e, () => assertValid(e.resource, { expectedType: e.type }))
  } finally {
    await Promise.allSettled([recorded, rids])
  }
  const done = await recorded
  if (done) return done
  const allocated = await rids
  return ctx.repo.transaction(async (w) => {
    const results = await run(w, ctx, writes, preferRepresentation, allocated)
    if (jobId) await w.tx`insert into bundle_job (job_id, results) values (${jobId}, ${JSON.stringify([...results])})`
    return results
  })
}

async function recordedResults(ctx: FhirContext, jobId: string): Promise<Map<number, EntryResult> | undefined> {
  const [done] = await ctx.repo.sql<{ results: string }[]>`select results from bundle_job where job_id = ${jobId}`
  return done ? new Map<number, EntryResult>(JSON.parse(done.results)) : undefined
}

/** `allocated`: ids already reserved for the creates (more are taken when the entries need them). */
async function run(w: WriteTx, ctx: FhirContext, writes: BundleEntry[], preferRepresentation: boolean, allocated: string[]): Promise<Map<number, EntryResult>> {
  const placeholders = new Map<string, string>() // fullUrl -> Type/id
  const plans: Planned[] = []
  const conditionalCreates = new Map<string, Planned>() // normalised ifNoneExist -> first entry
  const needRids: Planned[] = []

  // 1. Identities, in HAPI's order (DELETE, POST, PUT, PATCH).
  for (const e of writes) {
    const type = e.type as string
    await guardAsync(e, async () => {
      if (e.method === 'POST') {
        if (e.ifNoneExist) {
          const url = substitute(e.ifNoneExist, placeholders)
          const match = await resolveConditional(w, ctx, type, url)
          const dup = conditionalCreates.get(match.url.normalised)
          if (dup && !e.fullUrl && !dup.entry.fullUrl)
            throw new AppError(
              'invalid',
              `HAPI-2008: Unable to process Transaction - Request contains multiple anonymous entries (Bundle.entry.fullUrl not populated) with conditional URL: "${match.url.text}". Does transaction request contain duplicates?`,
            )
          if (dup) return void plans.push({ entry: e, action: 'noop', type, id: dup.id, existing: dup.existing, aliasOf: dup })
          if (match.matches.length > 1)
            throw new AppError(
              'precondition-failed',
              `HAPI-0958: Failed to CREATE resource with match URL "${match.url.text}" because this search matched ${match.matches.length} resources`,
            )
          if (match.matches.length === 1) {
            const existing = match.matches[0]
            const p: Planned = { entry: e, action: 'noop', type, id: existing.id, existing }
            conditionalCreates.set(match.url.normalised, p)
            if (e.fullUrl) placeholders.set(e.fullUrl, `${type}/${existing.id}`)
            return void plans.push(p)
          }
          const p: Planned = { entry: e, action: 'create', type, id: '', resource: e.resource, match }
          conditionalCreates.set(match.url.normalised, p)
          needRids.push(p)
          return void plans.push(p)
        }
        const p: Planned = { entry: e, action: 'create', type, id: '', resource: e.resource }
        needRids.push(p)
        return void plans.push(p)
      }
      if (e.id === undefined) {
        // Conditional PUT / DELETE / PATCH.
        const match = await resolveConditional(w, ctx, type, substitute(e.query as string, placeholders))
        if (match.matches.length > 1) {
          const code = e.method === 'PUT' ? 'HAPI-0988' : e.method === 'DELETE' ? 'HAPI-0962' : 'HAPI-0972'
          throw new AppError(
            'precondition-failed',
            `${code}: Failed to ${e.method === 'PUT' ? 'UPDATE' : e.method} resource with match URL "${match.url.text}" because this search matched ${match.matches.length} resources`,
          )
        }
        const found = match.matches[0]
        if (e.method === 'DELETE') return void plans.push({ entry: e, action: found ? 'delete' : 'noop', type, id: found?.id ?? '' })
        if (e.method === 'PATCH') {
          if (!found) throw new AppError('not-found', `HAPI-0973: Invalid match URL "${match.url.text}" - No resources match this search`)
          return void plans.push({ entry: e, action: 'patch', type, id: found.id })
        }
        const id = found?.id ?? (typeof e.resource.id === 'string' ? e.resource.id : '')
        const p: Planned = { entry: e, action: 'update', type, id, resource: e.resource }
        if (!found && id === '') needRids.push(p)
        if (e.fullUrl) placeholders.set(e.fullUrl, `${type}/${id}`)
        return void plans.push(p)
      }
      if (e.method === 'PUT') {
        if (e.resource.id !== undefined && e.resource.id !== e.id)
          throw new AppError('invalid', `HAPI-0420: Resource body ID of "${e.resource.id}" does not match URL ID of "${e.id}"`)
        if (e.fullUrl) placeholders.set(e.fullUrl, `${type}/${e.id}`)
      }
      plans.push({
        entry: e,
        action: e.method === 'PUT' ? 'update' : e.method === 'PATCH' ? 'patch' : 'delete',
        type,
        id: e.id as string,
        resource: e.resource,
      })
    })
  }
  const rids = needRids.length <= allocated.length ? allocated : [...allocated, ...(await ctx.repo.ids.allocate(needRids.length - allocated.length, w.tx))]
  needRids.forEach((p, i) => {
    p.rid = rids[i]
    if (p.id === '') {
      p.id = rids[i]
      p.serverId = true
    }
    if (p.entry.fullUrl) placeholders.set(p.entry.fullUrl, `${p.type}/${p.id}`)
  })
  for (const p of plans) {
    if (!p.aliasOf) continue
    p.id = p.aliasOf.id
    if (p.entry.fullUrl) placeholders.set(p.entry.fullUrl, `${p.type}/${p.id}`)
  }

  // 2. References: placeholders, then conditional references (bundle-local creates first, then stored ones).
  const conditionalRefs = new Map<string, string>()
  for (const p of plans) {
    if (!p.resource) continue
    for (const ref of findReferences(p.resource)) {
      if (!isConditionalReference(ref.value) || conditionalRefs.has(ref.value)) continue
      await guardAsync(p.entry, async () => conditionalRefs.set(ref.value, await resolveReference(w, ctx, ref.value, plans, placeholders)))
    }
  }
  for (const p of plans) {
    if (!p.resource) continue
    p.references = guard(p.entry, () =>
      rewriteReferences(
        p.resource,
        (value) => {
          if (value.startsWith('urn:uuid:') || value.startsWith('urn:oid:')) {
            const target = placeholders.get(value)
            if (!target)
              throw new AppError(
                'invalid',
                `HAPI-0541: Unable to satisfy placeholder ID ${value} found in element named 'reference' within resource of type: ${p.type}`,
              )
            return target
          }
          return placeholders.get(value) ?? conditionalRefs.get(value)
        },
        placeholders,
      ),
    )
  }

  // 3. Current versions of everything updated, patched or deleted, locked.
  const current = await w.lock(
    plans.filter((p) => p.action === 'update' || p.action === 'patch' || p.action === 'delete').map((p) => ({ type: p.type, id: p.id })),
  )

  // 4. Versions.
  const now = new Date()
  const versions: NewVersion[] = []
  const supersedes = new Set<string>()
  const results = new Map<number, EntryResult>()
  const needLate: NewVersion[] = [] // update-as-create of a client id found absent only now
  const latest = new Map<string, StoredVersion>() // a resource touched twice in one bundle
  for (const p of plans) {
    const key = `${p.type}/${p.id}`
    const cur = latest.get(key) ?? current.get(key)
    guard(p.entry, () => {
      switch (p.action) {
        case 'noop': {
          const same = p.existing ?? (p.aliasOf ? latest.get(key) : undefined)
          results.set(
            p.entry.index,
            same ? writeResult('200 OK', same, preferRepresentation, 'SUCCESSFUL_CREATE_WITH_CONDITIONAL_MATCH') : { status: '204 No Content' },
          )
          return
        }
        case 'create': {
          const v = newVersion(p.rid as string, p.type, p.id, 1, p.resource, now)
          v.references = p.references
          versions.push(v)
          latest.set(key, v)
          results.set(p.entry.index, writeResult('201 Created', v, preferRepresentation, 'SUCCESSFUL_CREATE'))
          return
        }
        case 'delete': {
          if (!cur || cur.deleted) return void results.set(p.entry.index, { status: '204 No Content' })
          checkIfMatch(p, cur)
          const v: NewVersion = { rid: cur.rid, type: p.type, id: p.id, version: cur.version + 1, lastUpdated: now, deleted: true, content: null }
          push(v, cur)
          results.set(p.entry.index, { status: '204 No Content', etag: `W/"${v.version}"` })
          return
        }
        default: {
          let resource = p.resource
          if (p.action === 'patch') {
            if (!cur) throw new AppError('not-found', `HAPI-2001: Resource ${key} is not known`)
            if (cur.deleted) throw new AppError('gone', `HAPI-2002: Resource ${key} was deleted`)
            const before = parseFhirJson(cur.content as string)
            resource = Array.isArray(p.entry.resource) ? applyJsonPatch(before, p.entry.resource) : applyFhirPatch(before, p.entry.resource)
            assertValid(resource, { expectedType: p.type })
          }
          if (cur) checkIfMatch(p, cur)
          else if (!p.serverId) assertClientId(p.type, p.id)
          const live = cur && !cur.deleted ? parseFhirJson(cur.content as string) : undefined
          const rid = cur?.rid ?? p.rid
          const v = newVersion(rid ?? '', p.type, p.id, (cur?.version ?? 0) + 1, resource, now, live?.meta)
          if (p.action === 'update') v.references = p.references
          if (live && sameContent(v.resource, live)) {
            results.set(
              p.entry.index,
              writeResult(
                '200 OK',
                cur as StoredVersion,
                preferRepresentation,
                p.action === 'patch' ? 'SUCCESSFUL_PATCH_NO_CHANGE' : 'SUCCESSFUL_UPDATE_NO_CHANGE',
              ),
            )
            return
          }
          if (cur) push(v, cur)
          else {
            if (!rid) needLate.push(v)
            versions.push(v)
            latest.set(key, v)
          }
          const status = live ? '200 OK' : '201 Created'
          results.set(
            p.entry.index,
            writeResult(
              status,
              v,
              preferRepresentation,
              p.action === 'patch' ? 'SUCCESSFUL_PATCH' : live ? 'SUCCESSFUL_UPDATE' : 'SUCCESSFUL_UPDATE_AS_CREATE',
            ),
          )
        }
      }
    })
  }
  if (needLate.length > 0) {
    const late = await ctx.repo.ids.allocate(needLate.length, w.tx)
    needLate.forEach((v, i) => {
      v.rid = late[i]
    })
  }
  await w.write(versions, supersedes).catch((err) => {
    // A reference to a missing resource (HAPI-1094) names the resource holding it: name its entry.
    const owner = (err as AppError).details?.owner
    const p = owner ? plans.find((x) => `${x.type}/${x.id}` === owner) : undefined
    throw p ? entryError(p.entry, err) : err
  })
  // Each conditional create must satisfy its own URL (HAPI-0539 in a transaction, 412).
  for (const p of plans) {
    if (p.action !== 'create' || !p.match) continue
    await assertMatchesOwnUrl(w, ctx, p.match, p.id).catch(() => {
      throw entryError(
        p.entry,
        new AppError('precondition-failed', `HAPI-0539: Invalid conditional URL "${p.match?.url.text}". The given resource is not matched by this URL.`),
      )
    })
  }
  return results

  function push(v: NewVersion, cur: StoredVersion): void {
    // Two writes of one resource in a bundle: the second supersedes the first, already in `versions`.
    const earlier = versions.findIndex((x) => x.rid === v.rid)
    if (earlier >= 0) {
      versions[earlier] = v
    } else {
      versions.push(v)
      if (current.has(`${cur.type}/${cur.id}`)) supersedes.add(v.rid)
    }
    latest.set(`${v.type}/${v.id}`, v)
  }
}

function checkIfMatch(p: Planned, cur: StoredVersion): void {
  const expected = parseIfMatch(p.entry.ifMatch)
  if (expected === undefined) return
  if (Number.isNaN(expected) || expected !== cur.version)
    throw new AppError('conflict', `HAPI-0989: Trying to update ${p.type}/${p.id}/_history/${p.entry.ifMatch} but this is not the current version`)
}

async function resolveReference(w: WriteTx, ctx: FhirContext, value: string, plans: Planned[], placeholders: Map<string, string>): Promise<string> {
  const q = value.indexOf('?')
  const type = value.slice(0, q)
  const local = localMatches(
    plans.filter((p) => (p.action === 'create' || p.action === 'update') && p.type === type).map((p) => ({ id: p.id, resource: p.resource })),
    type,
    value.slice(q + 1),
  )
  if (local.length > 1) throw new AppError('precondition-failed', `HAPI-1092: Invalid match URL "${value}" - Multiple resources match this search`)
  const match = await resolveConditional(w, ctx, type, substitute(value.slice(q + 1), placeholders))
  const ids = new Set([...local, ...match.matches.map((m) => m.id)])
  if (ids.size === 0) throw new AppError('not-found', `HAPI-1091: Invalid match URL "${value}" - No resources match this search`)
  if (ids.size > 1) throw new AppError('precondition-failed', `HAPI-1092: Invalid match URL "${value}" - Multiple resources match this search`)
  return `${type}/${[...ids][0]}`
}

/** Placeholders inside a conditional URL (e.g. `patient=urn:uuid:...`) become the ids they were given. */
function substitute(url: string, placeholders: Map<string, string>): string {
  return url.replace(/urn:(?:uuid|oid):[A-Za-z0-9.\-]+/g, (m) => placeholders.get(m) ?? m)
}

function guard<T>(e: BundleEntry, fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    throw entryError(e, err)
  }
}

async function guardAsync<T>(e: BundleEntry, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw entryError(e, err)
  }
}
