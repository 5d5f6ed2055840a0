// update: PUT /{type}/{id}, also create with a client-assigned id; conditional update PUT /{type}?query.
// https://hl7.org/fhir/R4/http.html#update  https://hl7.org/fhir/R4/http.html#cond-update
import { AppError, invalid } from '../../errors'
import { assertClientId, isClientAssignable } from '../ids'
import type { StoredVersion } from '../repo/types'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { bodyIdMismatch, invalidIfMatch, missingBodyId, versionConflict } from '../resource-errors'
import { assertMatchesOwnUrl, type ConditionalMatch, resolveConditional, singleMatch } from '../search/query/conditional'
import { assertValid } from '../validate/validate'
import { requireResource } from './create'
import { resolveMatchReferences } from './match-references'
import { applyPlan, nextVersion, parseIfMatch, planResult, type VersionPlan } from './store-version'
import { tookMs, writeResponse } from './write-response'

/** An update of (type, id) as the plan sees it: the resource already checked against its type. */
export interface UpdateRequest {
  type: string
  id: string
  resource: any
  /** The version If-Match names (NaN for one that names none). */
  ifMatch?: number
  /** The server chose the id (a conditional update that matched nothing): not subject to the client-id rules. */
  serverAssignedId?: boolean
  /** A conditional update that matched nothing, by its match URL: it creates, so its id may not be a live resource. */
  createsFor?: string
}

/**
 * The update of `current` (undefined when the id is unused): 409 when If-Match names another version
 * (HAPI-0989) or when a conditional update that matched nothing would overwrite a live resource, 400
 * for an id a client may not assign; then the next version, or no change.
 */
export function planUpdate(r: UpdateRequest, current: StoredVersion | undefined, rid: string, now: Date): VersionPlan {
  if (r.ifMatch !== undefined && current?.version !== r.ifMatch) throw versionConflict('update', r.type, r.id, r.ifMatch)
  if (r.createsFor !== undefined && current && !current.deleted)
    throw new AppError(
      'conflict',
      `Can not create resource with ID[${r.id}] for match URL "${r.createsFor}": a resource with this ID already exists and does not match the URL`,
    )
  if (!current && !r.serverAssignedId) assertClientId(r.type, r.id)
  return nextVersion(r.type, r.id, r.resource, current, rid, now)
}

/**
 * The id a conditional update writes (HAPI 7.0: BaseHapiFhirResourceDao.doUpdate()): the matched
 * resource's (400 HAPI-2279 when the body names another), else the body's when a client may assign it,
 * else none, and the server assigns one.
 */
export function conditionalUpdateId(match: ConditionalMatch, found: StoredVersion | undefined, resource: any): string | undefined {
  const bodyId: string | undefined = typeof resource.id === 'string' ? resource.id : undefined
  if (!found) return bodyId !== undefined && isClientAssignable(bodyId) ? bodyId : undefined
  if (bodyId !== undefined && bodyId !== found.id)
    throw invalid(`HAPI-2279: Failed to UPDATE resource with match URL "${match.url.text}" because the matching resource does not match the provided ID`)
  return found.id
}

export async function update(req: FhirRequest, ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>, type: string, id: string): Promise<FhirResponse> {
  const start = performance.now()
  const resource = requireResource(req)
  assertValid(resource, { expectedType: type })
  if (resource.id === undefined) throw missingBodyId()
  if (resource.id !== id) throw bodyIdMismatch(resource.id, id)
  const ifMatch = requireIfMatch(req)

  const plan = await retryOnCreateRace(() =>
    ctx.repo.transaction(async (w) => {
      await resolveMatchReferences(w, ctx, resource)
      const current = (await w.lock([{ type, id }])).get(`${type}/${id}`)
      const plan = planUpdate({ type, id, resource, ifMatch }, current, '', new Date())
      await applyPlan(w, plan)
      return plan
    }),
  )
  const { stored, changed, created } = planResult(plan)
  if (created) {
    const diag = `Successfully created resource "${type}/${id}/_history/${stored.version}". ${tookMs(start)}`
    return writeResponse(req, ctx, 201, stored, 'SUCCESSFUL_UPDATE_AS_CREATE', diag)
  }
  const diag = changed
    ? `Successfully updated resource "${type}/${id}/_history/${stored.version}". ${tookMs(start)}`
    : `Update succeeded: No changes were detected so no action was taken. ${tookMs(start)}`
  return writeResponse(req, ctx, 200, stored, changed ? 'SUCCESSFUL_UPDATE' : 'SUCCESSFUL_UPDATE_NO_CHANGE', diag)
}

/**
 * PUT /{type}?query. 0 matches: create, with the body's id when it is one a client may assign, else a
 * server id (201); 1: update it (a body id naming another resource is a 400, HAPI-2279); more: 412
 * HAPI-0988. HAPI 7.0: BaseHapiFhirResourceDao.doUpdate().
 */
export async function conditionalUpdate(req: FhirRequest, ctx: Pick<FhirContext, 'repo' | 'baseUrl' | 'config'>, type: string): Promise<FhirResponse> {
  const start = performance.now()
  const resource = requireResource(req)
  assertValid(resource, { expectedType: type })
  const ifMatch = requireIfMatch(req)
  // Allocated before the transaction (see create.ts); unused when a resource matches.
  const [rid] = await ctx.repo.ids.allocate(1)

  const { result, matched, url } = await retryOnCreateRace(() =>
    ctx.repo.transaction(async (w) => {
      const match = await resolveConditional(w, ctx, type, req.query)
      const target = await singleMatch(w, ctx, 'UPDATE', match)
      const id = conditionalUpdateId(match, target, resource) ?? rid
      const current = id === rid ? undefined : (await w.lock([{ type, id }])).get(`${type}/${id}`)
      await resolveMatchReferences(w, ctx, resource)
      const r: UpdateRequest = target ? { type, id, resource, ifMatch } : { type, id, resource, createsFor: match.url.text, serverAssignedId: id === rid }
      const plan = planUpdate(r, current, rid, new Date())
      await applyPlan(w, plan)
      if (!target) await assertMatchesOwnUrl(w, ctx, match, id)
      return { result: planResult(plan), matched: target !== undefined, url: match.url.text }
    }),
  )
  const { stored, changed } = result
  const ref = `${type}/${stored.id}/_history/${stored.version}`
  if (!matched) {
    const diag = `Successfully conditionally updated resource "${ref}". Created resource because no existing resource matched URL "${url}". ${tookMs(start)}`
    return writeResponse(req, ctx, 201, stored, 'SUCCESSFUL_UPDATE_NO_CONDITIONAL_MATCH', diag)
  }
  if (!changed) {
    const diag = `Conditional update succeeded: no changes were detected so no action was taken. Existing resource "${ref}" matched URL "${url}". ${tookMs(start)}`
    return writeResponse(req, ctx, 200, stored, 'SUCCESSFUL_UPDATE_WITH_CONDITIONAL_MATCH_NO_CHANGE', diag)
  }
  const diag = `Successfully conditionally updated resource "${ref}". Existing resource matched URL "${url}". ${tookMs(start)}`
  return writeResponse(req, ctx, 200, stored, 'SUCCESSFUL_UPDATE_WITH_CONDITIONAL_MATCH', diag)
}

/** If-Match of an update or patch: the version it names; 400 when it names none. */
export function requireIfMatch(req: FhirRequest): number | undefined {
  const expected = parseIfMatch(req.headers.ifMatch)
  if (Number.isNaN(expected)) throw invalidIfMatch(req.headers.ifMatch as string)
  return expected
}

/** Two concurrent creates of one client id: the loser's insert hits the unique key; it retries as an update. */
export async function retryOnCreateRace<T>(fn: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn()
    } catch (err) {
      if ((err as { code?: string }).code !== '23505' || i >= attempts) throw err
    }
  }
}
