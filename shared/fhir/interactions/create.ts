// create: POST /{type}, and conditional create with If-None-Exist. https://hl7.org/fhir/R4/http.html#create
// https://hl7.org/fhir/R4/http.html#ccreate (HAPI: shared/notes/hapi-behaviour.md §1.3)
import { AppError } from '../../errors'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { assertMatchesOwnUrl, multipleMatches, resolveConditional } from '../search/conditional'
import { assertValid } from '../validate/validate'
import { newVersion, storeVersion } from './store-version'
import { tookMs, writeResponse } from './write-response'

export async function create(req: FhirRequest, ctx: FhirContext, type: string): Promise<FhirResponse> {
  const start = performance.now()
  const resource = requireResource(req)
  assertValid(resource, { expectedType: type })
  // The server assigns the id; an id in the body is ignored, as HAPI does. Allocated before the
  // transaction: inside it, a refill through the pool could wait on this transaction's connection.
  const [rid] = await ctx.repo.ids.allocate(1)
  if (req.headers.ifNoneExist !== undefined) return conditionalCreate(req, ctx, type, resource, rid, req.headers.ifNoneExist, start)
  // A plain create is one statement (resource row and index rows), atomic without BEGIN/COMMIT.
  const stored = newVersion(rid, type, rid, 1, resource, new Date())
  await ctx.repo.insert([stored])
  const diag = `Successfully created resource "${type}/${rid}/_history/1". ${tookMs(start)}`
  return writeResponse(req, ctx, 201, stored, 'SUCCESSFUL_CREATE', diag, { location: true })
}

// 0 matches: create (201); 1: answer the existing resource and write nothing (200); more: 412 HAPI-0958.
async function conditionalCreate(
  req: FhirRequest,
  ctx: FhirContext,
  type: string,
  resource: any,
  rid: string,
  ifNoneExist: string,
  start: number,
): Promise<FhirResponse> {
  const { stored, created, url } = await ctx.repo.transaction(async (w) => {
    const match = await resolveConditional(w, ctx, type, ifNoneExist)
    if (match.matches.length > 1) throw await multipleMatches(w, ctx, 'HAPI-0958', 'CREATE', match)
    const [existing] = match.matches
    if (existing) return { stored: existing, created: false, url: match.url.text }
    const result = await storeVersion(w, type, rid, resource, undefined, rid)
    await assertMatchesOwnUrl(w, ctx, match, rid)
    return { stored: result.stored, created: true, url: match.url.text }
  })
  const ref = `${type}/${stored.id}/_history/${stored.version}`
  if (!created) {
    const diag = `Successfully conditionally created resource "${ref}". Existing resource matched URL "${url}" so no action was taken. ${tookMs(start)}`
    return writeResponse(req, ctx, 200, stored, 'SUCCESSFUL_CREATE_WITH_CONDITIONAL_MATCH', diag, { location: true })
  }
  const diag = `Successfully conditionally created resource "${ref}". No existing resources matched URL "${url}". ${tookMs(start)}`
  return writeResponse(req, ctx, 201, stored, 'SUCCESSFUL_CREATE_NO_CONDITIONAL_MATCH', diag, { location: true })
}

export function requireResource(req: FhirRequest): any {
  const body = req.body
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body))
    throw new AppError('invalid', 'HAPI-0450: Failed to parse request body as a resource: the body must be a FHIR resource')
  return body
}
