// patch: PATCH /{type}/{id} with FHIR Patch (a Parameters resource) or JSON Patch, chosen by Content-Type.
// https://hl7.org/fhir/R4/http.html#patch  https://hl7.org/fhir/R4/fhirpatch.html
import { AppError } from '../../errors'
import { applyFhirPatch } from '../patch/fhir-patch'
import { applyJsonPatch } from '../patch/json-patch'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { assertValid } from '../validate/validate'
import { parseIfMatch, storeVersion } from './store-version'
import { tookMs, writeResponse } from './write-response'

export async function patch(req: FhirRequest, ctx: FhirContext, type: string, id: string): Promise<FhirResponse> {
  const start = performance.now()
  const isJsonPatch = /^application\/json-patch\+json/i.test(req.headers.contentType ?? '')
  if (!isJsonPatch && (req.body as any)?.resourceType !== 'Parameters')
    throw new AppError('invalid', 'HAPI-1267: Invalid patch: the body must be a FHIR Patch Parameters resource or a JSON Patch (application/json-patch+json)')
  const expected = parseIfMatch(req.headers.ifMatch)
  if (Number.isNaN(expected)) throw new AppError('invalid', `Invalid If-Match header value: ${req.headers.ifMatch}`)

  const { stored, changed } = await ctx.repo.transaction(async (w) => {
    const current = (await w.lock([{ type, id }])).get(`${type}/${id}`)
    if (!current) throw new AppError('not-found', `HAPI-2001: Resource ${type}/${id} is not known`)
    if (current.deleted) throw new AppError('gone', `HAPI-2002: Resource was deleted at ${current.lastUpdated.toISOString()}`)
    if (expected !== undefined && current.version !== expected)
      throw new AppError('conflict', `HAPI-0974: Trying to patch ${type}/${id}/_history/${expected} but this is not the current version`)
    const before = JSON.parse(current.content as string)
    const after = isJsonPatch ? applyJsonPatch(before, req.body) : applyFhirPatch(before, req.body)
    if (after?.resourceType !== type || after.id !== id)
      throw new AppError('invalid', 'HAPI-1268: Invalid patch: it may not change the resource type or id')
    assertValid(after, { expectedType: type })
    return storeVersion(w, type, id, after, current)
  })
  const diag = changed
    ? `Successfully patched resource "${type}/${id}/_history/${stored.version}". ${tookMs(start)}`
    : `Patch succeeded: No changes were detected so no action was taken. ${tookMs(start)}`
  return writeResponse(req, ctx, 200, stored, changed ? 'SUCCESSFUL_PATCH' : 'SUCCESSFUL_PATCH_NO_CHANGE', diag)
}
