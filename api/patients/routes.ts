// The Patient Connection API (issue 7): patients, patient flows, sessions, FHIR sources, export, and
// its OpenAPI document. Any other path or method under these roots is an enveloped 404 or 405.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { apiError, notFound } from '../../shared/patients/api-error'
import { requestIdOf } from '../http/request-id'
import { ERROR_DOCS_PATH } from './envelope'
import { errorDocsHtml } from './error-docs'
import { exportRoutes } from './export'
import { flowRoutes } from './flows'
import { openApiDocument } from './openapi'
import { errorResponse, orgApi } from './org-api'
import { patientRoutes } from './patients'
import { sourceRoutes } from './sources'

const KNOWN = [
  { path: /^\/patients$/, methods: ['GET', 'POST'] },
  { path: /^\/patients\/[^/]+$/, methods: ['GET', 'PUT', 'DELETE'] },
  { path: /^\/patients\/[^/]+\/(patient-flows|sessions|\$everything)$/, methods: ['GET'] },
  { path: /^\/patients\/[^/]+\/fhir\/[^/]+\/[^/]+$/, methods: ['GET'] },
  { path: /^\/(patient-flows|sessions)$/, methods: ['POST'] },
  { path: /^\/(patient-flows|sessions)\/[^/]+$/, methods: ['GET'] },
  { path: /^\/connections(\/.*)?$/, methods: ['GET'] },
  // The connect flow's routes (api/connect/connections.ts).
  { path: /^\/patients\/[^/]+\/connections\/[^/]+$/, methods: ['GET', 'DELETE'] },
  { path: /^\/patients\/[^/]+\/connections\/[^/]+\/sync$/, methods: ['POST'] },
]

/** The answer to a path no route of the app knows: 404 resource_not_found in the envelope. */
export function unknownPath(request: Request, publicBase: string): Response {
  return errorResponse(notFound('endpoint', `${request.method} ${new URL(request.url).pathname}`), requestIdOf(request), publicBase)
}

export function patientApiRoutes(deps: AppDeps) {
  const api = orgApi(deps)
  const document = openApiDocument()
  const errorDocs = errorDocsHtml()
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
    .get(
      ERROR_DOCS_PATH,
      ({ request }) =>
        new Response(errorDocs, {
          headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-request-id': requestIdOf(request) },
        }),
    )
    .get('/openapi.json', ({ request }) => Response.json(document, { headers: { 'x-request-id': requestIdOf(request) } }))
    .all('/patients', fallback, { parse: 'none' })
    .all('/patients/*', fallback, { parse: 'none' })
    .all('/patient-flows', fallback, { parse: 'none' })
    .all('/patient-flows/*', fallback, { parse: 'none' })
    .all('/sessions', fallback, { parse: 'none' })
    .all('/sessions/*', fallback, { parse: 'none' })
    .all('/connections', fallback, { parse: 'none' })
}
