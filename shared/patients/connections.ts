// Connections: a patient's link to a FHIR source, made through a flow or session. Failed attempts are
// recorded too (status failed, failure_code). The connect flow (issue 8) records and updates them; the
// API shows them inside a patient (newest first) and inside the flow that made them.
// ../shared/notes/patient-api.md §4.2 and §5.
import type { Sql } from '../db/client'
import { notFound } from './api-error'
import { newId } from './ids'

export type ConnectionStatus = 'active' | 'failed' | 'expired' | 'refresh_failed' | 'disconnected'

/** A connection as GET /patients/{id} shows it. `connection_id` is the FHIR source (fhirsrc_) id. */
export interface PatientConnection {
  id: string
  resource_type: 'connection'
  session_id: string | null
  connection_id: string
  status: ConnectionStatus
  scopes: string[]
  failure_code: string | null
  failure_at: string | null
  created_at: string
  updated_at: string
}

/** A connection as a flow's `connections[]` shows it: `id` is null for a failed attempt (rendered in SQL
 *  by flows.ts, with the flow). */
export interface FlowConnection {
  id: string | null
  connection_id: string
  status: ConnectionStatus
  failure_code: string | null
  failure_at: string | null
  created_at: string
}

export interface ConnectionRow {
  id: string
  organization_id: string
  patient_id: string
  fhir_source_id: string
  flow_id: string | null
  status: ConnectionStatus
  scopes: string[]
  failure_code: string | null
  failure_at: Date | null
  created_at: Date
  updated_at: Date
}

const COLUMNS = [
  'id',
  'organization_id',
  'patient_id',
  'fhir_source_id',
  'flow_id',
  'status',
  'scopes',
  'failure_code',
  'failure_at',
  'created_at',
  'updated_at',
]

export const patientConnectionView = (r: ConnectionRow): PatientConnection => ({
  id: r.id,
  resource_type: 'connection',
  session_id: r.flow_id,
  connection_id: r.fhir_source_id,
  status: r.status,
  scopes: r.scopes,
  failure_code: r.failure_code,
  failure_at: r.failure_at?.toISOString() ?? null,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
})

export interface RecordConnection {
  organizationId: string
  patientId: string
  fhirSourceId: string
  /** The flow or session that made it. */
  flowId: string | null
  status: ConnectionStatus
  scopes?: string[]
  failureCode?: string | null
}

/** Records a connection (or a failed attempt); returns its row. `sql` may be a transaction. */
export async function recordConnection(sql: Sql, c: RecordConnection): Promise<ConnectionRow> {
  const failed = c.status === 'failed'
  const [row] = await sql<ConnectionRow[]>`
    insert into connection (id, organization_id, patient_id, fhir_source_id, flow_id, status, scopes, failure_code, failure_at)
    values (${newId('conn')}, ${c.organizationId}, ${c.patientId}, ${c.fhirSourceId}, ${c.flowId}, ${c.status}, ${c.scopes ?? []},
            ${failed ? (c.failureCode ?? 'unknown') : null}, ${failed ? sql`date_trunc('milliseconds', now())` : null})
    returning ${sql(COLUMNS)}`
  return row
}

/** Changes a connection's status (refresh failed, disconnected...); failure_code only for failed. */
export async function setConnectionStatus(sql: Sql, id: string, status: ConnectionStatus, failureCode?: string | null): Promise<ConnectionRow> {
  const failed = status === 'failed'
  const [row] = await sql<ConnectionRow[]>`
    update connection set status = ${status}, updated_at = date_trunc('milliseconds', now()),
      failure_code = ${failed ? (failureCode ?? 'unknown') : null},
      failure_at = ${failed ? sql`date_trunc('milliseconds', now())` : null}
    where id = ${id}
    returning ${sql(COLUMNS)}`
  if (!row) throw notFound('connection', id)
  return row
}

export async function getConnection(sql: Sql, organizationId: string, id: string): Promise<ConnectionRow> {
  const [row] = await sql<ConnectionRow[]>`select ${sql(COLUMNS)} from connection where id = ${id} and organization_id = ${organizationId}`
  if (!row) throw notFound('connection', id)
  return row
}

/** All connections of a patient, newest first. */
export async function patientConnections(sql: Sql, organizationId: string, patientId: string): Promise<ConnectionRow[]> {
  return sql<ConnectionRow[]>`
    select ${sql(COLUMNS)} from connection where organization_id = ${organizationId} and patient_id = ${patientId}
    order by created_at desc, seq desc`
}
