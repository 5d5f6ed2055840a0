// delete: DELETE /{type}/{id}, a logical delete. HAPI answers 200 with an OperationOutcome, also when the
// resource is absent or already deleted. https://hl7.org/fhir/R4/http.html#delete
import { AppError } from '../../errors'
import { storageOutcome } from '../outcome'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { parseIfMatch, storeDeletion } from './store-version'
import { etagOf, tookMs } from './write-response'

export async function remove(req: FhirRequest, ctx: FhirContext, type: string, id: string): Promise<FhirResponse> {
  const start = performance.now()
  const expected = parseIfMatch(req.headers.ifMatch)
  return ctx.repo.transaction(async (w) => {
    const current = (await w.lock([{ type, id }])).get(`${type}/${id}`)
    if (expected !== undefined && current && current.version !== expected)
      throw new AppError('conflict', `HAPI-0961: Trying to delete ${type}/${id}/_history/${expected} but this is not the current version`)
    if (!current) {
      const outcome = storageOutcome('SUCCESSFUL_DELETE_NOT_FOUND', `Not deleted, resource ${type}/${id} does not exist.`)
      return { status: 200, resource: outcome }
    }
    if (current.deleted) {
      const outcome = storageOutcome('SUCCESSFUL_DELETE_ALREADY_DELETED', `Not deleted, resource ${type}/${id} was already deleted.`)
      return { status: 200, resource: outcome, etag: etagOf(current.version) }
    }
    const stored = await storeDeletion(w, current)
    const outcome = storageOutcome('SUCCESSFUL_DELETE', `Successfully deleted 1 resource(s). ${tookMs(start)}`)
    return { status: 200, resource: outcome, etag: etagOf(stored.version), lastModified: stored.lastUpdated }
  })
}
