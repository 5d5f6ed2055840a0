// update: PUT /{type}/{id}, also create with a client-assigned id. https://hl7.org/fhir/R4/http.html#update
import { AppError } from '../../errors'
import { assertClientId } from '../ids'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
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
    throw new AppError('invalid', `HAPI-0420: Can not update resource, resource body must contain an ID element which matches the request URL for update (PUT) operation - Resource body ID of "${resource.id}" does not match URL ID of "${id}"`)
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
