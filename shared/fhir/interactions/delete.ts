// delete: DELETE /{type}/{id}, a logical delete, and conditional delete DELETE /{type}?query. HAPI answers
// 200 with an OperationOutcome, also when the resource is absent or already deleted, and refuses (409) to
// delete a resource another one references (enforce_referential_integrity_on_delete, default true).
// https://hl7.org/fhir/R4/http.html#delete  https://hl7.org/fhir/R4/http.html#3.1.0.7.1
import { AppError, type Issue } from '../../errors'
import { parseFhirJson } from '../format/json'
import { storageOutcome } from '../outcome'
import type { WriteTx } from '../repo/repo'
import type { StoredVersion } from '../repo/types'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { versionConflict } from '../resource-errors'
import { resolveConditional, singleMatch } from '../search/query/conditional'
import { parseReference } from '../search/types/reference'
import { applyPlan, type DeletePlan, deletionOf, parseIfMatch } from './store-version'
import { etagOf, tookMs } from './write-response'

/** A delete of (type, id) as the plan sees it. */
export interface DeleteRequest {
  type: string
  id: string
  /** The version If-Match names (NaN for one that names none). */
  ifMatch?: number
}

/**
 * The deletion of `current`: 409 (HAPI-0961) when If-Match names another version than an existing
 * one; nothing to do for an id never used or a resource already deleted (both answered 200 by HAPI).
 */
export function planDelete(r: DeleteRequest, current: StoredVersion | undefined, now: Date): DeletePlan {
  if (r.ifMatch !== undefined && current && current.version !== r.ifMatch) throw versionConflict('delete', r.type, r.id, r.ifMatch)
  if (!current) return { outcome: 'not-found' }
  if (current.deleted) return { outcome: 'already-deleted', current }
  return { outcome: 'deleted', version: deletionOf(current, now), replaces: current }
}

export async function remove(req: FhirRequest, ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>, type: string, id: string): Promise<FhirResponse> {
  const start = performance.now()
  const ifMatch = parseIfMatch(req.headers.ifMatch)
  return ctx.repo.transaction((w) => deleteOne(w, ctx, { type, id, ifMatch }, start))
}

/** DELETE /{type}?query: 0 matches is a 200 too; more than one is a 412 (HAPI-0962; no allow_multiple_delete). */
export async function conditionalDelete(req: FhirRequest, ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>, type: string): Promise<FhirResponse> {
  const start = performance.now()
  const ifMatch = parseIfMatch(req.headers.ifMatch)
  return ctx.repo.transaction(async (w) => {
    const match = await resolveConditional(w, ctx, type, req.query)
    const target = await singleMatch(w, ctx, 'DELETE', match)
    if (!target) {
      // HAPI (BaseHapiFhirResourceDao.deletePidList): a warning, issue code not-found, still a 200.
      const outcome = storageOutcome('SUCCESSFUL_DELETE_NOT_FOUND', `Unable to find resource matching URL "${match.url.text}". Nothing has been deleted.`, {
        severity: 'warning',
        code: 'not-found',
      })
      return { status: 200, resource: outcome }
    }
    return deleteOne(w, ctx, { type, id: target.id, ifMatch }, start)
  })
}

async function deleteOne(w: WriteTx, ctx: Pick<FhirContext, 'baseUrl'>, r: DeleteRequest, start: number): Promise<FhirResponse> {
  const { type, id } = r
  const current = (await w.lock([{ type, id }])).get(`${type}/${id}`)
  const plan = planDelete(r, current, new Date())
  if (plan.outcome === 'not-found') {
    const outcome = storageOutcome('SUCCESSFUL_DELETE_NOT_FOUND', `Not deleted, resource ${type}/${id} does not exist.`)
    return { status: 200, resource: outcome }
  }
  if (plan.outcome === 'already-deleted') {
    const outcome = storageOutcome('SUCCESSFUL_DELETE_ALREADY_DELETED', `Not deleted, resource ${type}/${id} was already deleted.`)
    return { status: 200, resource: outcome, etag: etagOf(plan.current.version) }
  }
  await assertNoReferrers(w, ctx, plan.replaces)
  await applyPlan(w, plan)
  const outcome = storageOutcome('SUCCESSFUL_DELETE', `Successfully deleted 1 resource(s). ${tookMs(start)}`)
  return { status: 200, resource: outcome, etag: etagOf(plan.version.version), lastModified: plan.version.lastUpdated }
}

/** At most this many referencing resources are reported, one issue each (HAPI: DeleteConflictUtil). */
const MAX_CONFLICTS = 10

/**
 * 409 when a current, non-deleted resource other than the target itself references it (the repository's
 * integrity checker finds them); a transaction checks its deletions with it after its writes. The message is HAPI's:
 * `HAPI-0550: HAPI-0515: Unable to delete Organization/1 because at least one resource has a reference to
 * this resource. First reference found was resource Patient/2 in path Patient.managingOrganization`.
 */
export async function assertNoReferrers(w: WriteTx, ctx: Pick<FhirContext, 'baseUrl'>, target: StoredVersion): Promise<void> {
  const referrers = await w.referrers(target, MAX_CONFLICTS)
  if (referrers.length === 0) return
  const messages = referrers.map((r) => {
    const path = referencePath(parseFhirJson(r.content), target, ctx.baseUrl) ?? `${r.type}.${r.code}`
    return `Unable to delete ${target.type}/${target.id} because at least one resource has a reference to this resource. First reference found was resource ${r.type}/${r.id} in path ${path}`
  })
  const issues: Issue[] = messages.map((m, n) => ({
    severity: 'error',
    code: 'processing',
    diagnostics: n === 0 ? `HAPI-0550: HAPI-0515: ${m}` : `HAPI-0515: ${m}`,
  }))
  throw new AppError('conflict', issues[0].diagnostics, { issues })
}

/**
 * The element path (`Patient.managingOrganization`, array positions left out, as HAPI's source path) of
 * the first reference in `resource` to `target`. Undefined when none is found, e.g. when the index row
 * came from a reference under another base URL; the caller then names the search parameter instead
 * (`{Type}.{code}`), which is HAPI's path only when the parameter's expression is that simple path.
 */
function referencePath(resource: any, target: { type: string; id: string }, baseUrl: string): string | undefined {
  const isTarget = (ref: unknown) => {
    if (typeof ref !== 'string') return false
    const p = parseReference(ref, baseUrl)
    return p?.targetType === target.type && p.targetId === target.id
  }
  const walk = (node: unknown, path: string): string | undefined => {
    if (Array.isArray(node)) {
      for (const item of node) {
        const found = walk(item, path)
        if (found) return found
      }
      return undefined
    }
    if (node === null || typeof node !== 'object') return isTarget(node) ? path : undefined
    if (isTarget((node as any).reference)) return path
    for (const [key, value] of Object.entries(node)) {
      if (key === 'resourceType' || key === 'id' || key === 'meta' || key === 'text') continue
      const found = walk(value, `${path}.${key}`)
      if (found) return found
    }
    return undefined
  }
  return walk(resource, resource.resourceType)
}
