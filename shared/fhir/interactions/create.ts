// create: POST /{type}, and conditional create with If-None-Exist. https://hl7.org/fhir/R4/http.html#create
// https://hl7.org/fhir/R4/http.html#ccreate (HAPI: shared/notes/hapi-behaviour.md §1.3)
import { AppError } from '../../errors'
import type { NewVersion } from '../repo/types'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { assertMatchesOwnUrl, resolveConditional, singleMatch } from '../search/query/conditional'
import { assertValid } from '../validate/validate'
import { hasMatchReferences, resolveMatchReferences } from './match-references'
import { applyPlan, newVersion, type VersionPlan } from './store-version'
import { tookMs, writeResponse } from './write-response'

/** A new resource: version 1, its id the server's (`rid`); an id in the body is ignored, as HAPI does. */
export function planCreate(type: string, rid: string, resource: any, now: Date): VersionPlan & { outcome: 'created' } {
  return { outcome: 'created', version: newVersion(rid, type, rid, 1, resource, now) }
}

export async function create(req: FhirRequest, ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>, type: string): Promise<FhirResponse> {
  const start = performance.now()
  const resource = requireResource(req)
  assertValid(resource, { expectedType: type })
  // The id is allocated before any transaction: inside one, a refill through the pool could wait on
  // the transaction's own connection.
  const [rid] = await ctx.repo.ids.allocate(1)
  if (req.headers.ifNoneExist !== undefined) return conditionalCreate(req, ctx, type, resource, rid, req.headers.ifNoneExist, start)
  let stored: NewVersion
  if (hasMatchReferences(resource)) {
    // Its conditional references are resolved in the transaction that writes it.
    stored = await ctx.repo.transaction(async (w) => {
      await resolveMatchReferences(w, ctx, resource)
      const plan = planCreate(type, rid, resource, new Date())
      await applyPlan(w, plan)
      return plan.version
    })
  } else {
    // A plain create is one statement (resource row and index rows), atomic without BEGIN/COMMIT.
    stored = planCreate(type, rid, resource, new Date()).version
    await ctx.repo.insert([stored])
  }
  const diag = `Successfully created resource "${type}/${rid}/_history/1". ${tookMs(start)}`
  return writeResponse(req, ctx, 201, stored, 'SUCCESSFUL_CREATE', diag, { location: true })
}

// 0 matches: create (201); 1: answer the existing resource and write nothing (200); more: 412 HAPI-0958.
async function conditionalCreate(
  req: FhirRequest,
  ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>,
  type: string,
  resource: any,
  rid: string,
  ifNoneExist: string,
  start: number,
): Promise<FhirResponse> {
  const { stored, created, url } = await ctx.repo.transaction(async (w) => {
    const match = await resolveConditional(w, ctx, type, ifNoneExist)
    const existing = await singleMatch(w, ctx, 'CREATE', match)
    if (existing) return { stored: existing, created: false, url: match.url.text }
    await resolveMatchReferences(w, ctx, resource)
    const plan = planCreate(type, rid, resource, new Date())
    await applyPlan(w, plan)
    await assertMatchesOwnUrl(w, ctx, match, rid)
    return { stored: plan.version, created: true, url: match.url.text }
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
