// patch: PATCH /{type}/{id} with FHIR Patch (a Parameters resource) or JSON Patch, chosen by Content-Type;
// conditional patch PATCH /{type}?query. https://hl7.org/fhir/R4/http.html#patch
// https://hl7.org/fhir/R4/fhirpatch.html (HAPI: BaseStorageResourceDao.doPatch())
import { AppError } from '../../errors'
import { parseFhirJson } from '../format/json'
import { applyFhirPatch } from '../patch/fhir-patch'
import { applyJsonPatch } from '../patch/json-patch'
import type { WriteTx } from '../repo/repo'
import type { StoredVersion } from '../repo/types'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { deletedResource, unknownResource, versionConflict } from '../resource-errors'
import { type MatchBase, noMatch, resolveConditional, singleMatch } from '../search/query/conditional'
import { assertValid } from '../validate/validate'
import { applyPlan, nextVersion, planResult, type StoreResult, type VersionPlan } from './store-version'
import { resolveMatchReferences } from './match-references'
import { requireIfMatch } from './update'
import { tookMs, writeResponse } from './write-response'

/** A patch of (type, id) as the plan sees it. */
export interface PatchRequest {
  type: string
  id: string
  /** A JSON Patch (an array of operations), or else a FHIR Patch Parameters resource. */
  isJsonPatch: boolean
  body: unknown
  /** The version If-Match names (NaN for one that names none). */
  ifMatch?: number
}

/**
 * The patch applied to `current`: 404 (HAPI-2001) when there is none, 410 when it is a
 * deletion, 409 (HAPI-0974) when If-Match names another version, 400 when the patched resource changes
 * its type or id (HAPI-1268) or is invalid; then the next version, or no change.
 */
export function planPatch(r: PatchRequest, current: StoredVersion | undefined, now: Date): VersionPlan {
  const { type, id } = r
  if (!current) throw unknownResource(type, id)
  if (current.deleted) throw deletedResource(current)
  if (r.ifMatch !== undefined && current.version !== r.ifMatch) throw versionConflict('patch', type, id, r.ifMatch)
  const before = parseFhirJson(current.content as string)
  const after = r.isJsonPatch ? applyJsonPatch(before, r.body) : applyFhirPatch(before, r.body)
  if (after?.resourceType !== type || after.id !== id) throw new AppError('invalid', 'HAPI-1268: Invalid patch: it may not change the resource type or id')
  assertValid(after, { expectedType: type })
  return nextVersion(type, id, after, current, current.rid, now)
}

export async function patch(req: FhirRequest, ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>, type: string, id: string): Promise<FhirResponse> {
  const start = performance.now()
  const r = patchRequest(req, type, id)
  const { stored, changed } = await ctx.repo.transaction((w) => patchOne(w, ctx, r))
  const diag = changed
    ? `Successfully patched resource "${type}/${id}/_history/${stored.version}". ${tookMs(start)}`
    : `Patch succeeded: No changes were detected so no action was taken. ${tookMs(start)}`
  return writeResponse(req, ctx, 200, stored, changed ? 'SUCCESSFUL_PATCH' : 'SUCCESSFUL_PATCH_NO_CHANGE', diag)
}

/** PATCH /{type}?query: 0 matches is a 404 (HAPI-0973), more than one a 412 (HAPI-0972). */
export async function conditionalPatch(req: FhirRequest, ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>, type: string): Promise<FhirResponse> {
  const start = performance.now()
  const r = patchRequest(req, type, '')
  const { result, url } = await ctx.repo.transaction(async (w) => {
    const match = await resolveConditional(w, ctx, type, req.query)
    const target = await singleMatch(w, ctx, 'PATCH', match)
    if (!target) throw noMatch(match)
    return { result: await patchOne(w, ctx, { ...r, id: target.id }), url: match.url.text }
  })
  const { stored, changed } = result
  const ref = `${type}/${stored.id}/_history/${stored.version}`
  const diag = changed
    ? `Successfully conditionally patched resource. Existing resource ${ref} matched URL: ${url}. ${tookMs(start)}`
    : `Successfully conditionally patched resource with no changes detected. Existing resource ${ref} matched URL: ${url}. ${tookMs(start)}`
  return writeResponse(req, ctx, 200, stored, changed ? 'SUCCESSFUL_CONDITIONAL_PATCH' : 'SUCCESSFUL_CONDITIONAL_PATCH_NO_CHANGE', diag)
}

/** The patch an HTTP request asks for: the format by Content-Type (HAPI-1267 for a body of neither). */
function patchRequest(req: FhirRequest, type: string, id: string): PatchRequest {
  const isJsonPatch = /^application\/json-patch\+json/i.test(req.headers.contentType ?? '')
  if (!isJsonPatch && (req.body as any)?.resourceType !== 'Parameters')
    throw new AppError('invalid', 'HAPI-1267: Invalid patch: the body must be a FHIR Patch Parameters resource or a JSON Patch (application/json-patch+json)')
  return { type, id, isJsonPatch, body: req.body, ifMatch: requireIfMatch(req) }
}

async function patchOne(w: WriteTx, base: MatchBase, r: PatchRequest): Promise<StoreResult> {
  // Conditional references in the values the patch writes are resolved first, as on any write (HAPI);
  // a Bundle's PATCH entries have theirs resolved with the Bundle's (bundle/entry-references.ts).
  await resolveMatchReferences(w, base, r.body)
  const current = (await w.lock([{ type: r.type, id: r.id }])).get(`${r.type}/${r.id}`)
  const plan = planPatch(r, current, new Date())
  await applyPlan(w, plan)
  return planResult(plan)
}
