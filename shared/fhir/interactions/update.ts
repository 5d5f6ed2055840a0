// update: PUT /{type}/{id}, also create with a client-assigned id; conditional update PUT /{type}?query.
// https://hl7.org/fhir/R4/http.html#update  https://hl7.org/fhir/R4/http.html#cond-update
import { AppError, invalid } from '../../errors'
import { assertClientId, isValidId } from '../ids'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { assertMatchesOwnUrl, multipleMatches, resolveConditional } from '../search/conditional'
import { assertValid } from '../validate/validate'
import { requireResource } from './create'
import { parseIfMatch, storeVersion } from './store-version'
import { tookMs, writeResponse } from './write-response'

export async function update(req: FhirRequest, ctx: FhirContext, type: string, id: string): Promise<FhirResponse> {
  const start = performance.now()
  const resource = requireResource(req)
  assertValid(resource, { expectedType: type })
  if (resource.id === undefined)
    throw new AppError('invalid', 'HAPI-0419: Can not update resource, resource body must contain an ID element for update (PUT) operation')
  if (resource.id !== id)
    throw new AppError(
      'invalid',
      `HAPI-0420: Can not update resource, resource body must contain an ID element which matches the request URL for update (PUT) operation - Resource body ID of "${resource.id}" does not match URL ID of "${id}"`,
    )
  const expected = parseIfMatch(req.headers.ifMatch)
  if (Number.isNaN(expected)) throw new AppError('invalid', `Invalid If-Match header value: ${req.headers.ifMatch}`)

  const result = await retryOnCreateRace(() =>
    ctx.repo.transaction(async (w) => {
      const current = (await w.lock([{ type, id }])).get(`${type}/${id}`)
      if (expected !== undefined && (!current || current.version !== expected))
        throw new AppError('conflict', `HAPI-0989: Trying to update ${type}/${id}/_history/${expected} but this is not the current version`)
      if (!current) assertClientId(type, id)
      const [rid] = current ? [current.rid] : await ctx.repo.ids.allocate(1, w.tx)
      return storeVersion(w, type, id, resource, current, rid)
    }),
  )
  const { stored, changed, created } = result
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
export async function conditionalUpdate(req: FhirRequest, ctx: FhirContext, type: string): Promise<FhirResponse> {
  const start = performance.now()
  const resource = requireResource(req)
  assertValid(resource, { expectedType: type })
  const expected = parseIfMatch(req.headers.ifMatch)
  if (Number.isNaN(expected)) throw new AppError('invalid', `Invalid If-Match header value: ${req.headers.ifMatch}`)
  const bodyId: string | undefined = typeof resource.id === 'string' ? resource.id : undefined
  // Allocated before the transaction (see create.ts); unused when a resource matches.
  const [rid] = await ctx.repo.ids.allocate(1)

  const { result, matched, url } = await retryOnCreateRace(() =>
    ctx.repo.transaction(async (w) => {
      const match = await resolveConditional(w, ctx, type, req.query)
      if (match.matches.length > 1) throw await multipleMatches(w, ctx, 'HAPI-0988', 'UPDATE', match)
      const [target] = match.matches
      if (target) {
        if (bodyId !== undefined && bodyId !== target.id)
          throw invalid(`HAPI-2279: Failed to UPDATE resource with match URL "${match.url.text}" because the matching resource does not match the provided ID`)
        const current = (await w.lock([{ type, id: target.id }])).get(`${type}/${target.id}`)
        if (expected !== undefined && current?.version !== expected)
          throw new AppError('conflict', `HAPI-0989: Trying to update ${type}/${target.id}/_history/${expected} but this is not the current version`)
        return { result: await storeVersion(w, type, target.id, resource, current, rid), matched: true, url: match.url.text }
      }
      const id = bodyId !== undefined && isClientAssignable(bodyId) ? bodyId : rid
      const current = id === rid ? undefined : (await w.lock([{ type, id }])).get(`${type}/${id}`)
      // The id names a live resource that does not match the URL: creating it would overwrite that one.
      if (current && !current.deleted)
        throw new AppError(
          'conflict',
          `Can not create resource with ID[${id}] for match URL "${match.url.text}": a resource with this ID already exists and does not match the URL`,
        )
      const result = await storeVersion(w, type, id, resource, current, rid)
      await assertMatchesOwnUrl(w, ctx, match, id)
      return { result, matched: false, url: match.url.text }
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

/** A body id the server takes as the new resource's id: valid, and not purely numeric (HAPI's ALPHANUMERIC strategy). */
function isClientAssignable(id: string): boolean {
  return isValidId(id) && !/^[0-9]+$/.test(id)
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
