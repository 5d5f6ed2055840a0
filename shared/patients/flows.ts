// Patient flows (`pf_`) and sessions (`sess_`): one record, two views (as in the mirrored product, where
// they are one object under two names). A row keeps the id and kind of the endpoint that created it;
// `pf_X` and `sess_X` both name it, each list shows every flow of the patient in its own view, and
// events and redirects use the creating kind. Creating one upserts the patient.
// Status `open`, then `complete` or `expired` (both terminal); an open flow past expires_at reads as
// expired, and the expiry job (flow-expiry.ts) marks such rows. The `url` is the hosted connect page.
// ../spec/patient-connection-api.md; ../shared/notes/patient-api.md §4, §7.2.
import type { Sql } from '../db/client'
import { apiError, badRequest, invalidData, notFound } from './api-error'
import type { FlowConnection } from './connections'
import { isHttpUrl, resolveSourceIds } from './fhir-sources'
import { newId } from './ids'
import type { ListCursor, ListPage, ListQuery } from './list-page'
import { checkEmail, checkMetadata, checkName, checkPatientId, type Metadata } from './patient-fields'
import { getPatient, upsertPatient } from './patients'

export type FlowKind = 'patient_flow' | 'session'
export type FlowStatus = 'open' | 'complete' | 'expired'
export const FLOW_STATUSES: readonly FlowStatus[] = ['open', 'complete', 'expired']

export interface PatientFlow {
  id: string
  resource_type: FlowKind
  status: FlowStatus
  url: string
  patient_id: string
  connection_id: string | null
  recommended_connection_ids: string[] | null
  return_url: string
  return_button_label: string | null
  connections: FlowConnection[]
  expires_at: string
  metadata: Metadata
  created_at: string
}

/** The body of POST /patient-flows and POST /sessions (types already checked at the edge). */
export interface FlowInput {
  patient_id: string
  patient_email?: string | null
  patient_name?: string | null
  connection_id?: string | null
  recommended_connection_ids?: string[] | null
  return_url: string
  return_button_label?: string | null
  expires_in?: number
  /** Checked by checkMetadata(). */
  metadata?: unknown
}

/** A flow row as stored, with `status` already the effective one (expired once past expires_at). */
export interface FlowRow {
  id: string
  /** Present on rows read through selectFlow. */
  connections?: FlowConnection[]
  kind: FlowKind
  organization_id: string
  patient_id: string
  status: FlowStatus
  connection_id: string | null
  recommended_connection_ids: string[] | null
  return_url: string
  return_button_label: string | null
  metadata: Metadata
  expires_at: Date
  created_at: Date
  seq: string
}

export const EXPIRES_IN = { min: 60, max: 86_400, default: 1_800 }

const PREFIX = { patient_flow: 'pf', session: 'sess' } as const

/** The address of a flow's hosted page (with its own token: connect/page-token.ts). */
export type FlowPageUrl = (flowId: string) => string

/** The id of a flow in a view: the stored id's random part under the view's prefix. */
export function viewId(storedId: string, as: FlowKind): string {
  return `${PREFIX[as]}_${storedId.slice(storedId.indexOf('_') + 1)}`
}

/** The stored ids an id of either view may be (`pf_X` and `sess_X` name the same record). */
export function flowIdCandidates(id: string): string[] {
  const m = /^(pf|sess)_(.+)$/.exec(id)
  return m ? [`pf_${m[2]}`, `sess_${m[2]}`] : [id]
}

/** A flow as the API shows it, in the view `as` (by default the kind that created it). */
export function flowView(r: FlowRow, connections: FlowConnection[], pageUrl: FlowPageUrl, as: FlowKind = r.kind): PatientFlow {
  return {
    id: viewId(r.id, as),
    resource_type: as,
    status: r.status,
    url: pageUrl(r.id),
    patient_id: r.patient_id,
    connection_id: r.connection_id,
    recommended_connection_ids: r.recommended_connection_ids,
    return_url: r.return_url,
    return_button_label: r.return_button_label,
    connections,
    expires_at: r.expires_at.toISOString(),
    metadata: r.metadata,
    created_at: r.created_at.toISOString(),
  }
}

// Every read goes through this select: the effective status is computed in one place, and the flow's
// connections (oldest first) come in the same query, already in the API's shape (FlowConnection):
// `id` null for a failed attempt, timestamps in UTC with milliseconds.
const selectFlow = (sql: Sql) => sql`
  select f.id, f.kind, f.organization_id, f.patient_id,
    case when f.status = 'open' and f.expires_at <= now() then 'expired' else f.status end as status,
    f.connection_id, f.recommended_connection_ids, f.return_url, f.return_button_label, f.metadata, f.expires_at, f.created_at, f.seq::text,
    coalesce((
      select json_agg(json_build_object(
        'id', case when c.status = 'failed' then null else c.id end, 'connection_id', c.fhir_source_id, 'status', c.status,
        'failure_code', c.failure_code, 'failure_at', to_char(c.failure_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'created_at', to_char(c.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) order by c.created_at, c.seq)
      from connection c where c.flow_id = f.id), '[]') as connections
  from patient_flow f`

/** Creates a flow or session, upserting its patient, in one transaction. */
export async function createFlow(sql: Sql, organizationId: string, kind: FlowKind, input: FlowInput, pageUrl: FlowPageUrl): Promise<PatientFlow> {
  const patientId = checkPatientId(input.patient_id)
  const email = checkEmail(input.patient_email, 'patient_email')
  const name = checkName(input.patient_name, 'patient_name')
  if (!isHttpUrl(input.return_url)) throw invalidData('return_url', 'return_url must be an http(s) URL')
  const label = input.return_button_label ?? null
  if (label !== null && (label.length < 1 || label.length > 60)) throw invalidData('return_button_label', 'return_button_label must be 1-60 characters')
  const expiresIn = input.expires_in ?? EXPIRES_IN.default
  if (!Number.isInteger(expiresIn) || expiresIn < EXPIRES_IN.min || expiresIn > EXPIRES_IN.max)
    throw invalidData('expires_in', `expires_in must be an integer number of seconds from ${EXPIRES_IN.min} to ${EXPIRES_IN.max}`)
  const direct = input.connection_id !== undefined && input.connection_id !== null
  if (direct && input.recommended_connection_ids !== undefined && input.recommended_connection_ids !== null)
    throw badRequest('connection_id (direct mode) and recommended_connection_ids (picker mode) are mutually exclusive', 'recommended_connection_ids')
  const metadata = checkMetadata(input.metadata)
  const [connectionId] = direct ? await resolveSourceIds(sql, [input.connection_id as string], 'connection_id') : [null]
  const recommended = direct ? null : await resolveSourceIds(sql, input.recommended_connection_ids ?? [], 'recommended_connection_ids')
  const id = newId(PREFIX[kind])
  const row = await sql.begin(async (tx) => {
    await upsertPatient(tx as unknown as Sql, organizationId, { patient_id: patientId, email, name })
    const [r] = await tx<FlowRow[]>`
      insert into patient_flow (id, kind, organization_id, patient_id, connection_id, recommended_connection_ids, return_url,
                                return_button_label, metadata, expires_at)
      values (${id}, ${kind}, ${organizationId}, ${patientId}, ${connectionId}, ${recommended}::text[], ${input.return_url},
              ${label}, ${tx.json(metadata)}, date_trunc('milliseconds', now()) + make_interval(secs => ${expiresIn}))
      returning id, kind, organization_id, patient_id, status, connection_id, recommended_connection_ids, return_url,
                return_button_label, metadata, expires_at, created_at, seq::text`
    return r
  })
  return flowView(row as FlowRow, [], pageUrl)
}

/** Any flow or session by its stored id, whatever its organization (for the hosted page); undefined if unknown. */
export async function loadFlow(sql: Sql, id: string): Promise<FlowRow | undefined> {
  const [row] = await sql<FlowRow[]>`${selectFlow(sql)} where f.id = ${id}`
  return row
}

/** A flow of the organization by an id of either view, rendered in the view `as`; 404 otherwise. */
export async function getFlow(sql: Sql, organizationId: string, as: FlowKind, id: string, pageUrl: FlowPageUrl): Promise<PatientFlow> {
  const [row] = await sql<FlowRow[]>`${selectFlow(sql)} where f.id = any(${flowIdCandidates(id)}::text[]) and f.organization_id = ${organizationId}`
  if (!row) throw notFound(as === 'session' ? 'session' : 'patient flow', id, 'id')
  return flowView(row, row.connections ?? [], pageUrl, as)
}

/** GET /patients/{id}/patient-flows and /sessions: every flow of the patient in the view `as`, newest first, optional effective-status filter. */
export async function listFlows(
  sql: Sql,
  organizationId: string,
  patientId: string,
  as: FlowKind,
  cursor: ListCursor,
  q: ListQuery,
  status: FlowStatus | undefined,
  pageUrl: FlowPageUrl,
): Promise<ListPage<PatientFlow>> {
  const byStatus =
    status === 'open'
      ? sql`and f.status = 'open' and f.expires_at > now()`
      : status === 'expired'
        ? sql`and (f.status = 'expired' or (f.status = 'open' and f.expires_at <= now()))`
        : status === 'complete'
          ? sql`and f.status = 'complete'`
          : sql``
  const rows = await sql<FlowRow[]>`
    ${selectFlow(sql)}
    where f.organization_id = ${organizationId} and f.patient_id = ${patientId} ${byStatus}
      ${q.after ? sql`and (f.created_at, f.seq) < (${q.after.createdAt}, ${q.after.seq}::bigint)` : sql``}
    order by f.created_at desc, f.seq desc
    limit ${q.limit + 1}`
  // An unknown patient (or another organization's) is 404, not an empty list; only an empty page asks.
  if (rows.length === 0) await getPatient(sql, organizationId, patientId)
  return cursor.page(rows, q.limit, (r) => flowView(r, r.connections ?? [], pageUrl, as))
}

/**
 * Marks an open flow complete (the patient finished the hosted page). A flow already complete or
 * expired (also one past expires_at) is 409: both states are terminal.
 */
export async function completeFlow(sql: Sql, id: string): Promise<FlowRow> {
  const [row] = await sql<FlowRow[]>`
    update patient_flow set status = 'complete', completed_at = now()
    where id = ${id} and status = 'open' and expires_at > now()
    returning id, kind, organization_id, patient_id, status, connection_id, recommended_connection_ids, return_url,
              return_button_label, metadata, expires_at, created_at, seq::text`
  if (row) return row
  const current = await loadFlow(sql, id)
  if (!current) throw notFound('patient flow', id)
  throw apiError('conflict', 'resource_conflict', `Flow ${id} is ${current.status}; only an open flow can complete`)
}

/** Marks open flows past expires_at as expired, in batches; returns how many changed. */
export async function expireFlows(sql: Sql, batch = 1000): Promise<number> {
  let total = 0
  for (;;) {
    const rows = await sql`
      update patient_flow set status = 'expired'
      where id in (select id from patient_flow where status = 'open' and expires_at <= now() limit ${batch} for update skip locked)
      returning id`
    total += rows.length
    if (rows.length < batch) return total
  }
}
