// A transaction Bundle in one database transaction, all or nothing, written set-wise: every identity
// (placeholder ids, conditional creates/updates/deletes, conditional references) is resolved first
// (identities.ts, entry-references.ts), each entry is planned by the interactions' own plan functions
// (entry-versions.ts), then all versions and their index rows go in with multi-row statements. GET
// entries run after the commit, as HAPI does. https://hl7.org/fhir/R4/http.html#transaction
import { AppError, invalid } from '../../errors'
import { assertNoReferrers } from '../interactions/delete'
import type { WriteTx } from '../repo/repo'
import type { NewVersion } from '../repo/types'
import type { FhirContext } from '../request'
import { assertMatchesOwnUrl, type MatchBase } from '../search/query/conditional'
import { assertValid } from '../validate/validate'
import { type BundleEntry, VERB_ORDER } from './entries'
import { resolveReferences } from './entry-references'
import { planVersions } from './entry-versions'
import { type Planned, resolveIdentities } from './identities'
import { IndexedCandidates, localMatches } from './local-match'
import { type EntryResult, entryError, inEntry, inEntrySync } from './results'

/**
 * Writes the non-GET entries of a transaction; returns their results by entry index. With a `jobId`, the
 * results are recorded in the same database transaction, and a second run of the same job returns them
 * without writing again (a retried job is never applied twice: should two attempts race, the second's
 * record collides with the first's key and its transaction rolls back).
 */
export async function writeTransaction(
  ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>,
  entries: BundleEntry[],
  preferRepresentation: boolean,
  jobId?: string,
): Promise<Map<number, EntryResult>> {
  const writes = entries
    .filter((e) => e.method !== 'GET' && e.method !== 'HEAD')
    .sort((a, b) => VERB_ORDER[a.method] - VERB_ORDER[b.method] || a.index - b.index)
  // Asked of the database while the entries are checked, rather than one after the other inside the
  // transaction: a retried job's recorded results, and ids for the creates.
  const recorded = jobId ? ctx.repo.recordedResults<EntryResult>(jobId) : Promise.resolve(undefined)
  const creates = writes.filter((e) => e.method === 'POST').length
  const rids = creates > 0 ? ctx.repo.ids.allocate(creates) : Promise.resolve([])
  try {
    for (const e of writes) if (e.resource && e.method !== 'PATCH') inEntrySync(e, () => assertValid(e.resource, { expectedType: e.type }))
  } finally {
    await Promise.allSettled([recorded, rids])
  }
  const done = await recorded
  if (done) return done
  const allocated = await rids
  return ctx.repo.transaction(async (w) => {
    const results = await run(w, ctx, writes, preferRepresentation, allocated)
    if (jobId) await w.recordResults(jobId, results)
    return results
  })
}

/** `allocated`: ids already reserved for the creates (more are taken when the entries need them). */
async function run(
  w: WriteTx,
  ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>,
  writes: BundleEntry[],
  preferRepresentation: boolean,
  allocated: string[],
): Promise<Map<number, EntryResult>> {
  const identities = await resolveIdentities(w, ctx, writes, allocated, (n) => ctx.repo.ids.allocate(n, w.tx))
  await resolveReferences(w, ctx, identities)
  const { plans } = identities
  const stored = await w.lock(
    plans.filter((p) => p.action === 'update' || p.action === 'patch' || p.action === 'delete').map((p) => ({ type: p.type, id: p.id })),
  )
  const { versions, supersedes, results } = planVersions(plans, stored, preferRepresentation, new Date())
  await w.write(versions, supersedes).catch((err) => {
    // A reference to a missing resource (HAPI-1094) names the resource holding it: name its entry.
    const owner = (err as AppError).details?.owner
    const p = owner ? plans.find((x) => `${x.type}/${x.id}` === owner) : undefined
    throw p ? entryError(p.entry, err) : err
  })
  await assertNotReferenced(w, ctx, plans, versions)
  await assertCreatesMatchOwnUrls(w, ctx, plans)
  assertNoDuplicates(plans, versions)
  return results
}

/**
 * A resource deleted by the Bundle may still be referenced only by resources the Bundle also deletes or
 * rewrites without the reference: checked after the write, as a DELETE alone is (409 HAPI-0550/0515),
 * against the index rows as the Bundle left them (HAPI: BaseTransactionProcessor.checkForDeleteConflicts).
 */
async function assertNotReferenced(w: WriteTx, base: MatchBase, plans: Planned[], versions: NewVersion[]): Promise<void> {
  for (const v of versions) {
    if (!v.deleted) continue
    const p = plans.find((x) => x.action === 'delete' && x.type === v.type && x.id === v.id) as Planned
    await inEntry(p.entry, () => assertNoReferrers(w, base, v))
  }
}

/**
 * A resource created through a match URL must satisfy it. HAPI, in a transaction: a conditional create
 * that does not is 400 HAPI-0929 (FhirResourceDaoR4CreateTest.testConditionalCreateFailsIfMatchUrlDoesntMatch_InTransaction),
 * a conditional update that creates is 412 HAPI-0539 (FhirSystemDaoR4Test.testConditionalUrlWhichDoesNotMatchResource;
 * BaseTransactionProcessor.validateAllInsertsMatchTheirConditionalUrls).
 */
async function assertCreatesMatchOwnUrls(w: WriteTx, base: MatchBase, plans: Planned[]): Promise<void> {
  for (const p of plans) {
    const match = p.match
    if (!match || !(p.action === 'create' || p.action === 'update')) continue
    await assertMatchesOwnUrl(w, base, match, p.id).catch((err) => {
      if (p.action === 'create') throw entryError(p.entry, err)
      throw entryError(
        p.entry,
        new AppError('precondition-failed', `HAPI-0539: Invalid conditional URL "${match.url.text}". The given resource is not matched by this URL.`),
      )
    })
  }
}

/**
 * No match URL that created a resource may match two of the resources the Bundle writes (400 HAPI-0542,
 * HAPI: BaseTransactionProcessor.validateNoDuplicates), e.g. a conditional create beside a plain create
 * of the same identifier. Evaluated in memory, as HAPI does; criteria it cannot evaluate are skipped.
 */
function assertNoDuplicates(plans: Planned[], versions: NewVersion[]): void {
  const byType = new Map<string, IndexedCandidates>()
  for (const p of plans) {
    if (!p.match || !(p.action === 'create' || p.createsFor !== undefined)) continue
    const { url } = p.match
    let candidates = byType.get(url.type)
    if (!candidates) {
      candidates = new IndexedCandidates(versions.filter((v) => v.type === url.type && !v.deleted).map((v) => ({ id: v.id, resource: v.resource })))
      byType.set(url.type, candidates)
    }
    if (localMatches(candidates, url.type, url.params).length > 1)
      throw invalid(
        `HAPI-0542: Unable to process Transaction - Request would cause multiple resources to match URL: "${url.text}". Does transaction request contain duplicates?`,
      )
  }
}
