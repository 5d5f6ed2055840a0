// create: POST /{type}. https://hl7.org/fhir/R4/http.html#create
import { AppError } from '../../errors'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { assertValid } from '../validate/validate'
import { storeVersion } from './store-version'
import { tookMs, writeResponse } from './write-response'

export async function create(req: FhirRequest, ctx: FhirContext, type: string): Promise<FhirResponse> {
  const start = performance.now()
  const resource = requireResource(req)
  assertValid(resource, { expectedType: type })
  if (req.headers.ifNoneExist)
    throw new AppError('not-allowed', 'Conditional create (If-None-Exist) needs the search engine, which this server does not provide yet')
  // The server assigns the id; an id in the body is ignored, as HAPI does.
  const [rid] = await ctx.repo.ids.allocate(1)
  const { stored } = await ctx.repo.transaction((w) => storeVersion(w, type, rid, resource, undefined, rid))
  const diag = `Successfully created resource "${type}/${rid}/_history/1". ${tookMs(start)}`
  return writeResponse(req, ctx, 201, stored, 'SUCCESSFUL_CREATE', diag, { location: true })
}

export function requireResource(req: FhirRequest): any {
  const body = req.body
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body))
    throw new AppError('invalid', 'HAPI-0450: Failed to parse request body as a resource: the body must be a FHIR resource')
  return body
}
