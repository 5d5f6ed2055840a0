// The Patient Connection API (issue 7): patients, patient flows, sessions, FHIR sources, export, and
// its OpenAPI document. Any other path or method under these roots is an enveloped 404 or 405.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { apiError, notFound } from '../../shared/patients/api-error'
import { requestIdOf } from '../http/request-id'
import { exportRoutes } from './export'
import { flowRoutes } from './flows'
import { openApiDocument } from './openapi'
import { orgApi } from './org-api'
import { patientRoutes } from './patients'
import { sourceRoutes } from './sources'

const KNOWN = [
  { path: /^\/patients$/, methods: ['GET', 'POST'] },
  { path: /^\/patients\/[^/]+$/, methods: ['GET', 'PUT', 'DELETE'] },
  { path: /^\/patients\/[^/]+\/(patient-flows|sessions|\$everything)$/, methods: ['GET'] },
  { path: /^\/(patient-flows|sessions)$/, methods: ['POST'] },
  { path: /^\/(patient-flows|sessions)\/[^/]+$/, methods: ['GET'] },
  { path: /^\/connections(\/.*)?$/, methods: ['GET'] },
  // The connect flow's routes (api/connect/connections.ts).
  { path: /^\/patients\/[^/]+\/connections\/[^/]+$/, methods: ['GET', 'DELETE'] },
  { path: /^\/patients\/[^/]+\/connections\/[^/]+\/sync$/, methods: ['POST'] },
]

export function patientApiRoutes(deps: AppDeps) {
  const api = orgApi(deps)
  const document = openApiDocument()
  const fallback = api.handle(async ({ request, url }) => {
    const known = KNOWN.find((k) => k.path.test(url.pathname))
    if (known && !known.methods.includes(request.method))
      throw apiError('not-allowed', 'bad_request', `${request.method} is not allowed on ${url.pathname}; allowed: ${known.methods.join(', ')}`)
    throw notFound('endpoint', `${request.method} ${url.pathname}`)
  })
  return new Elysia({ name: 'patient-api' })
    .use(patientRoutes(deps))
    .use(flowRoutes(deps))
    .use(sourceRoutes(deps))
    .use(exportRoutes(deps))
    .get('/openapi.json', ({ request }) => Response.json(document, { headers: { 'x-request-id': requestIdOf(request) } }))
    .all('/patients', fallback, { parse: 'none' })
    .all('/patients/*', fallback, { parse: 'none' })
    .all('/patient-flows', fallback, { parse: 'none' })
    .all('/patient-flows/*', fallback, { parse: 'none' })
    .all('/sessions', fallback, { parse: 'none' })
    .all('/sessions/*', fallback, { parse: 'none' })
    .all('/connections', fallback, { parse: 'none' })
}
