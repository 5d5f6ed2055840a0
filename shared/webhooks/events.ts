// Webhook events: one row per endpoint an event goes to (its delivery record), created when something
// happens and delivered by the webhook-delivery job. ../shared/notes/patient-api.md §6.2.
import type { Sql } from '../db/client'
import type { Jobs } from '../jobs/queues'
import { apiError, notFound } from '../patients/api-error'
import { newId } from '../patients/ids'
import type { ListCursor, ListPage, ListQuery } from '../patients/list-page'
import { endpointRow } from './endpoints'
import type { EventType } from './event-types'
import { scheduleDelivery } from './schedule-delivery'

export interface EventDeps {
  sql: Sql
  jobs: Jobs
  /** The retry schedule; its first delay applies to the first attempt. */
  retryDelaysMs: number[]
}

/** The event as delivered, plus its delivery state. */
export interface WebhookEventRecord {
  id: string
  object: 'event'
  type: string
  api_version: string
  created_at: string
  data: { object: unknown }
  webhook_endpoint_id: string
  attempts: number
  next_attempt_at: string | null
  delivered_at: string | null
  last_status_code: number | null
  last_response_body: string | null
  last_redelivered_at: string | null
}

interface EventRow {
  id: string
  webhook_endpoint_id: string
  payload: string
  attempts: number
  next_attempt_at: Date | null
  delivered_at: Date | null
  last_status_code: number | null
  last_response_body: string | null
  last_redelivered_at: Date | null
  created_at: Date
  seq: string
}

const iso = (d: Date | null) => d?.toISOString() ?? null

const view = (r: EventRow): WebhookEventRecord => ({
  ...JSON.parse(r.payload),
  webhook_endpoint_id: r.webhook_endpoint_id,
  attempts: r.attempts,
  next_attempt_at: iso(r.next_attempt_at),
  delivered_at: iso(r.delivered_at),
  last_status_code: r.last_status_code,
  last_response_body: r.last_response_body,
  last_redelivered_at: iso(r.last_redelivered_at),
})

/**
 * Records the event for every active endpoint of the organization subscribed to its type, and
 * enqueues the first delivery attempt of each. Returns the event ids.
 */
export async function emitEvent(deps: EventDeps, organizationId: string, type: EventType, object: unknown): Promise<string[]> {
  const endpoints = await deps.sql<{ id: string; api_version: string }[]>`
    select id, api_version from webhook_endpoint
    where organization_id = ${organizationId} and status = 'active' and (${type} = any(events) or '*' = any(events))`
  const ids: string[] = []
  for (const ep of endpoints) {
    const id = newId('evt')
    const createdAt = new Date(Math.floor(Date.now()))
    const payload = JSON.stringify({ id, object: 'event', type, api_version: ep.api_version, created_at: createdAt.toISOString(), data: { object } })
    const first = deps.retryDelaysMs[0] ?? 0
    await deps.sql`
      insert into webhook_event (id, organization_id, webhook_endpoint_id, type, api_version, payload, next_attempt_at, created_at)
      values (${id}, ${organizationId}, ${ep.id}, ${type}, ${ep.api_version}, ${payload}, ${new Date(createdAt.getTime() + first)}, ${createdAt})`
    await scheduleDelivery(deps.jobs, { eventId: id, attempt: 1 }, first)
    ids.push(id)
  }
  return ids
}

/** GET /webhooks/{id}/events: newest first. */
export async function listEvents(
  sql: Sql,
  organizationId: string,
  endpointId: string,
  cursor: ListCursor,
  q: ListQuery,
): Promise<ListPage<WebhookEventRecord>> {
  await endpointRow(sql, organizationId, endpointId)
  const rows = await sql<EventRow[]>`
    select id, webhook_endpoint_id, payload, attempts, next_attempt_at, delivered_at, last_status_code, last_response_body,
           last_redelivered_at, created_at, seq::text as seq
    from webhook_event where webhook_endpoint_id = ${endpointId}
      ${q.after ? sql`and (created_at, seq) < (${q.after.createdAt}, ${q.after.seq}::bigint)` : sql``}
    order by webhook_event.created_at desc, webhook_event.seq desc limit ${q.limit + 1}`
  return cursor.page(rows, q.limit, view)
}

export async function getEvent(sql: Sql, organizationId: string, id: string): Promise<WebhookEventRecord> {
  const [row] = await sql<EventRow[]>`
    select id, webhook_endpoint_id, payload, attempts, next_attempt_at, delivered_at, last_status_code, last_response_body,
           last_redelivered_at, created_at, seq::text as seq
    from webhook_event where id = ${id} and organization_id = ${organizationId}`
  if (!row) throw notFound('event', id, 'id')
  return view(row)
}

/** POST /events/{id}/redeliver: one more attempt now; at most one per minute per event (429). */
export async function redeliverEvent(deps: EventDeps, organizationId: string, id: string): Promise<WebhookEventRecord> {
  const [row] = await deps.sql<{ id: string }[]>`
    update webhook_event set last_redelivered_at = now()
    where id = ${id} and organization_id = ${organizationId}
      and (last_redelivered_at is null or last_redelivered_at <= now() - interval '1 minute')
    returning id`
  if (!row) {
    await getEvent(deps.sql, organizationId, id) // 404 when unknown
    throw apiError('busy', 'throttled', `Event ${id} was redelivered less than a minute ago; redelivery is limited to once per minute per event`)
  }
  const [{ attempts }] = await deps.sql<{ attempts: number }[]>`select attempts from webhook_event where id = ${id}`
  await scheduleDelivery(deps.jobs, { eventId: id, attempt: attempts + 1, manual: true }, 0)
  return getEvent(deps.sql, organizationId, id)
}
