// Webhook management for organizations: /webhooks (create, list), /webhooks/{id} (get, update,
// delete), rotate-secret, an endpoint's events, and redelivery of an event. Behind the same org edge
// as the patient API (API key, Version, rate limit, envelope). ../shared/notes/patient-api.md §6.2.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { ListCursor, listQuery } from '../../shared/patients/list-page'
import { createEndpoint, deleteEndpoint, getEndpoint, listEndpoints, rotateSecret, updateEndpoint } from '../../shared/webhooks/endpoints'
import { listEvents, redeliverEvent } from '../../shared/webhooks/events'
import { badRequest } from '../../shared/patients/api-error'
import { ok, orgApi } from '../patients/org-api'

export function webhookRoutes(deps: AppDeps) {
  const api = orgApi(deps)
  const { sql } = deps
  const events = { sql, jobs: deps.jobs, retryDelaysMs: deps.config.webhookRetryDelaysMs }
  const object = (body: unknown) => {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('The request body must be a JSON object')
    const allowed = new Set(['url', 'events', 'description', 'metadata', 'status', 'api_version'])
    const unknown = Object.keys(body).find((k) => !allowed.has(k))
    if (unknown) throw badRequest(`Received unknown parameter: ${unknown}`, unknown)
    return body as Record<string, unknown>
  }
  return new Elysia({ name: 'connect-webhooks' })
    .post(
      '/webhooks',
      api.handle(async ({ principal, version, body }) => ok(await createEndpoint(deps, principal.organizationId, version, object(body)))),
      {
        parse: 'none',
      },
    )
    .get(
      '/webhooks',
      api.handle(async ({ principal, url }) => {
        const cursor = ListCursor.of(deps.secret, principal.organizationId, 'webhooks', {})
        return ok(await listEndpoints(sql, principal.organizationId, cursor, listQuery(url.searchParams, cursor)))
      }),
    )
    .get(
      '/webhooks/:id',
      api.handle(async ({ principal, params }) => ok(await getEndpoint(sql, principal.organizationId, params.id))),
    )
    .patch(
      '/webhooks/:id',
      api.handle(async ({ principal, params, body }) => ok(await updateEndpoint(deps, principal.organizationId, params.id, object(body)))),
      {
        parse: 'none',
      },
    )
    .delete(
      '/webhooks/:id',
      api.handle(async ({ principal, params }) => ok(await deleteEndpoint(sql, principal.organizationId, params.id))),
    )
    .post(
      '/webhooks/:id/rotate-secret',
      api.handle(async ({ principal, params }) => ok(await rotateSecret(deps, principal.organizationId, params.id))),
      {
        parse: 'none',
      },
    )
    .get(
      '/webhooks/:id/events',
      api.handle(async ({ principal, params, url }) => {
        const cursor = ListCursor.of(deps.secret, principal.organizationId, 'webhook-events', { endpoint: params.id })
        return ok(await listEvents(sql, principal.organizationId, params.id, cursor, listQuery(url.searchParams, cursor)))
      }),
    )
    .post(
      '/events/:id/redeliver',
      api.handle(async ({ principal, params }) => ok(await redeliverEvent(events, principal.organizationId, params.id))),
      {
        parse: 'none',
      },
    )
}
