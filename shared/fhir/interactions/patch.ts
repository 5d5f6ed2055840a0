// patch: PATCH /{type}/{id} with FHIR Patch (a Parameters resource) or JSON Patch, chosen by Content-Type;
// conditional patch PATCH /{type}?query. https://hl7.org/fhir/R4/http.html#patch
// https://hl7.org/fhir/R4/fhirpatch.html (HAPI: BaseStorageResourceDao.doPatch())
import { AppError } from '../../errors'
import { applyFhirPatch } from '../patch/fhir-patch'
import { applyJsonPatch } from '../patch/json-patch'
import type { WriteTx } from '../repo/repo'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { multipleMatches, resolveConditional } from '../search/conditional'
import { assertValid } from '../validate/validate'
import { parseIfMatch, type StoreResult, storeVersion } from './store-version'
import { tookMs, writeResponse } from './write-response'
import { parseFhirJson } from '../format/json'

interface PatchInput {
  isJsonPatch: boolean
  expected: number | undefined
  body: unknown
}

export async function patch(req: FhirRequest, ctx: FhirContext, type: string, id: string): Promise<FhirResponse> {
  const start = performance.now()
  const input = patchInput(req)
  const { stored, changed } = await ctx.repo.transaction((w) => patchOne(w, type, id, input))
  const diag = changed
    ? `Successfully patched resource "${type}/${id}/_history/${stored.version}". ${tookMs(start)}`
    : `Patch succeeded: No changes were detected so no action was taken. ${tookMs(start)}`
  return writeResponse(req, ctx, 200, stored, changed ? 'SUCCESSFUL_PATCH' : 'SUCCESSFUL_PATCH_NO_CHANGE', diag)
}

/** PATCH /{type}?query: 0 matches is a 404 (HAPI-0973), more than one a 412 (HAPI-0972). */
export async function conditionalPatch(req: FhirRequest, ctx: FhirContext, type: string): Promise<FhirResponse> {
  const start = performance.now()
  const input = patchInput(req)
  const { result, url } = await ctx.repo.transaction(async (w) => {
    const match = await resolveConditional(w, ctx, type, req.query)
    if (match.matches.length > 1) throw await multipleMatches(w, ctx, 'HAPI-0972', 'PATCH', match)
    const [target] = match.matches
    if (!target) throw new AppError('not-found', `HAPI-0973: Invalid match URL "${match.url.text}" - No resources match this search`)
    return { result: await patchOne(w, type, target.id, input), url: match.url.text }
  })
  const { stored, changed } = result
  const ref = `${type}/${stored.id}/_history/${stored.version}`
  const diag = changed
    ? `Successfully conditionally patched resource. Existing resource ${ref} matched URL: ${url}. ${tookMs(start)}`
    : `Successfully conditionally patched resource with no changes detected. Existing resource ${ref} matched URL: ${url}. ${tookMs(start)}`
  return writeResponse(req, ctx, 200, stored, changed ? 'SUCCESSFUL_CONDITIONAL_PATCH' : 'SUCCESSFUL_CONDITIONAL_PATCH_NO_CHANGE', diag)
}

function patchInput(req: FhirRequest): PatchInput {
  const isJsonPatch = /^application\/json-patch\+json/i.test(req.headers.contentType ?? '')
  if (!isJsonPatch && (req.body as any)?.resourceType !== 'Parameters')
    throw new AppError('invalid', 'HAPI-1267: Invalid patch: the body must be a FHIR Patch Parameters resource or a JSON Patch (application/json-patch+json)')
  const expected = parseIfMatch(req.headers.ifMatch)
  if (Number.isNaN(expected)) throw new AppError('invalid', `Invalid If-Match header value: ${req.headers.ifMatch}`)
  return { isJsonPatch, expected, body: req.body }
}

async function patchOne(w: WriteTx, type: string, id: string, input: PatchInput): Promise<StoreResult> {
  const current = (await w.lock([{ type, id }])).get(`${type}/${id}`)
  if (!current) throw new AppError('not-found', `HAPI-2001: Resource ${type}/${id} is not known`)
  if (current.deleted) throw new AppError('gone', `HAPI-2002: Resource was deleted at ${current.lastUpdated.toISOString()}`)
  if (input.expected !== undefined && current.version !== input.expected)
    throw new AppError('conflict', `HAPI-0974: Trying to patch ${type}/${id}/_history/${input.expected} but this is not the current version`)
  const before = parseFhirJson(current.content as string)
  const after = input.isJsonPatch ? applyJsonPatch(before, input.body) : applyFhirPatch(before, input.body)
  if (after?.resourceType !== type || after.id !== id) throw new AppError('invalid', 'HAPI-1268: Invalid patch: it may not change the resource type or id')
  assertValid(after, { expectedType: type })
  return storeVersion(w, type, id, after, current)
}
