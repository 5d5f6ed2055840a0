// Webhook endpoints of an organization (`wh_`): create, list, get, update, delete, rotate secret. The
// signing secret (`whsec_`) is shown once, on create and on rotate, and stored sealed. An endpoint URL
// the outbound client would refuse (loopback, private, link-local, metadata... unless OUTBOUND_ALLOW
// names it) is refused at registration; delivery checks again at send time.
// ../shared/notes/patient-api.md §6.2 (Endpoint object, Management operations).
import { randomBytes } from 'node:crypto'
import type { Sql } from '../db/client'
import type { Outbound } from '../net/client'
import { OutboundRefused } from '../net/target'
import { badRequest, invalidData, notFound } from '../patients/api-error'
import { newId } from '../patients/ids'
import type { ListCursor, ListPage, ListQuery } from '../patients/list-page'
import { checkMetadata, type Metadata } from '../patients/patient-fields'
import type { SecretCipher } from '../secrets/cipher'
import { isEventType } from './event-types'

/** What managing endpoints needs besides the database. */
export interface EndpointDeps {
  sql: Sql
  cipher: SecretCipher
  outbound: Outbound
}

export type EndpointStatus = 'active' | 'disabled'

export interface WebhookEndpoint {
  id: string
  resource_type: 'webhook_endpoint'
  url: string
  events: string[]
  status: EndpointStatus
  description: string | null
  metadata: Metadata
  api_version: string
  created_at: string
  updated_at: string
  /** Only on create and rotate-secret. */
  secret?: string
}

export interface EndpointInput {
  url?: unknown
  events?: unknown
  description?: unknown
  metadata?: unknown
  status?: unknown
}

interface EndpointRow {
  id: string
  organization_id: string
  url: string
  events: string[]
  status: EndpointStatus
  description: string | null
  metadata: Metadata
  api_version: string
  created_at: Date
  updated_at: Date
  seq: string
}

const COLUMNS = 'id, organization_id, url, events, status, description, metadata, api_version, created_at, updated_at, seq::text as seq'

const view = (r: EndpointRow, secret?: string): WebhookEndpoint => ({
  id: r.id,
  resource_type: 'webhook_endpoint',
  url: r.url,
  events: r.events,
  status: r.status,
  description: r.description,
  metadata: r.metadata,
  api_version: r.api_version,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  ...(secret ? { secret } : {}),
})

const newSecret = () => `whsec_${randomBytes(24).toString('base64url')}`

export async function createEndpoint(
  { sql, cipher, outbound }: EndpointDeps,
  organizationId: string,
  apiVersion: string,
  input: EndpointInput,
): Promise<WebhookEndpoint> {
  if (input.url === undefined) throw badRequest('url is required', 'url')
  if (input.events === undefined) throw badRequest('events is required', 'events')
  if (input.status !== undefined) throw badRequest('status cannot be set on create', 'status')
  const url = await checkUrl(outbound, input.url)
  const events = checkEvents(input.events)
  const description = checkDescription(input.description)
  const metadata = checkMetadata(input.metadata)
  const secret = newSecret()
  const [row] = await sql<EndpointRow[]>`
    insert into webhook_endpoint (id, organization_id, url, events, description, metadata, api_version, secret)
    values (${newId('wh')}, ${organizationId}, ${url}, ${events}, ${description}, ${sql.json(metadata)}, ${apiVersion}, ${cipher.seal(secret)})
    returning ${sql.unsafe(COLUMNS)}`
  return view(row, secret)
}

export async function listEndpoints(sql: Sql, organizationId: string, cursor: ListCursor, q: ListQuery): Promise<ListPage<WebhookEndpoint>> {
  const rows = await sql<EndpointRow[]>`
    select ${sql.unsafe(COLUMNS)} from webhook_endpoint where organization_id = ${organizationId}
      ${q.after ? sql`and (created_at, seq) < (${q.after.createdAt}, ${q.after.seq}::bigint)` : sql``}
    order by webhook_endpoint.created_at desc, webhook_endpoint.seq desc limit ${q.limit + 1}`
  return cursor.page(rows, q.limit, (r) => view(r))
}

export async function getEndpoint(sql: Sql, organizationId: string, id: string): Promise<WebhookEndpoint> {
  return view(await endpointRow(sql, organizationId, id))
}

/** PATCH: the given fields change; `api_version` is immutable. `status: "active"` re-enables. */
export async function updateEndpoint(
  { sql, outbound }: Omit<EndpointDeps, 'cipher'>,
  organizationId: string,
  id: string,
  input: EndpointInput & { api_version?: unknown },
): Promise<WebhookEndpoint> {
  if (input.api_version !== undefined) throw badRequest('api_version is pinned at registration and cannot change', 'api_version')
  const cur = await endpointRow(sql, organizationId, id)
  const status = input.status === undefined ? cur.status : input.status
  if (status !== 'active' && status !== 'disabled') throw invalidData('status', "status must be 'active' or 'disabled'")
  const url = input.url === undefined ? cur.url : await checkUrl(outbound, input.url)
  const [row] = await sql<EndpointRow[]>`
    update webhook_endpoint set
      url = ${url},
      events = ${input.events === undefined ? cur.events : checkEvents(input.events)},
      description = ${input.description === undefined ? cur.description : checkDescription(input.description)},
      metadata = ${sql.json(input.metadata === undefined ? cur.metadata : checkMetadata(input.metadata))},
      status = ${status},
      updated_at = date_trunc('milliseconds', now())
    where id = ${id} and organization_id = ${organizationId}
    returning ${sql.unsafe(COLUMNS)}`
  return view(row)
}

export async function deleteEndpoint(sql: Sql, organizationId: string, id: string): Promise<{ id: string; resource_type: 'webhook_endpoint'; deleted: true }> {
  const rows = await sql`delete from webhook_endpoint where id = ${id} and organization_id = ${organizationId} returning id`
  if (rows.length === 0) throw notFound('webhook endpoint', id, 'id')
  return { id, resource_type: 'webhook_endpoint', deleted: true }
}

/** A new secret replaces the old one at once; it is returned this once. */
export async function rotateSecret({ sql, cipher }: Omit<EndpointDeps, 'outbound'>, organizationId: string, id: string): Promise<WebhookEndpoint> {
  const secret = newSecret()
  const [row] = await sql<EndpointRow[]>`
    update webhook_endpoint set secret = ${cipher.seal(secret)}, updated_at = date_trunc('milliseconds', now())
    where id = ${id} and organization_id = ${organizationId}
    returning ${sql.unsafe(COLUMNS)}`
  if (!row) throw notFound('webhook endpoint', id, 'id')
  return view(row, secret)
}

export async function endpointRow(sql: Sql, organizationId: string, id: string): Promise<EndpointRow> {
  const [row] = await sql<EndpointRow[]>`select ${sql.unsafe(COLUMNS)} from webhook_endpoint where id = ${id} and organization_id = ${organizationId}`
  if (!row) throw notFound('webhook endpoint', id, 'id')
  return row
}

/** HTTPS to a target the outbound client allows; plain http only to one OUTBOUND_ALLOW names (development). */
async function checkUrl(outbound: Outbound, v: unknown): Promise<string> {
  if (typeof v !== 'string') throw invalidData('url', 'url must be a string')
  let u: URL
  try {
    u = new URL(v)
  } catch {
    throw invalidData('url', 'url must be an absolute URL')
  }
  let allowListed: boolean
  try {
    ;({ allowListed } = await outbound.checkUrl(u.toString()))
  } catch (err) {
    if (err instanceof OutboundRefused) throw invalidData('url', `url is refused: ${err.message}`)
    throw err
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && allowListed))
    throw invalidData('url', 'url must use https (plain http only to a development target that OUTBOUND_ALLOW names)')
  return u.toString()
}

/** `["*"]` or 1-5 known event types. */
function checkEvents(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0 || v.some((e) => typeof e !== 'string'))
    throw invalidData('events', 'events must be a non-empty array of event types')
  if (v.length === 1 && v[0] === '*') return ['*']
  if (v.length > 5) throw invalidData('events', 'events may list at most 5 event types (or ["*"])')
  const unknown = v.find((e) => !isEventType(e))
  if (unknown !== undefined) throw invalidData('events', `Unknown event type '${unknown}'`)
  return [...new Set(v as string[])]
}

function checkDescription(v: unknown): string | null {
  if (v === undefined || v === null) return null
  if (typeof v !== 'string' || v.length > 500) throw invalidData('description', 'description must be a string of at most 500 characters')
  return v
}
