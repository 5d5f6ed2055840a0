// Patients of an organization, keyed by the organization's own patient_id: create (409 on a duplicate),
// upsert (from a flow or session), read with connections, full replace, list with filters.
// ../shared/notes/patient-api.md §7.
import type { Sql } from '../db/client'
import { apiError, badRequest, notFound } from './api-error'
import { type PatientConnection, patientConnections, patientConnectionView } from './connections'
import type { ListCursor, ListPage, ListQuery } from './list-page'
import { checkEmail, checkMetadata, checkName, checkPatientId, type Metadata } from './patient-fields'

export interface Patient {
  id: string
  resource_type: 'patient'
  email: string | null
  name: string | null
  metadata: Metadata
  created_at: string
}

export interface PatientDetail extends Patient {
  connections: PatientConnection[]
}

export interface PatientInput {
  patient_id: string
  email?: string | null
  name?: string | null
  /** Checked by checkMetadata(). */
  metadata?: unknown
}

interface PatientRow {
  patient_id: string
  email: string | null
  name: string | null
  metadata: Metadata
  created_at: Date
  seq: string
}

export const patientView = (r: PatientRow): Patient => ({
  id: r.patient_id,
  resource_type: 'patient',
  email: r.email,
  name: r.name,
  metadata: r.metadata,
  created_at: r.created_at.toISOString(),
})

/** POST /patients: 409 external_id_already_exists when the organization has the patient_id already. */
export async function createPatient(sql: Sql, organizationId: string, input: PatientInput): Promise<Patient> {
  const id = checkPatientId(input.patient_id)
  const email = checkEmail(input.email)
  const name = checkName(input.name)
  const metadata = checkMetadata(input.metadata)
  const [row] = await sql<PatientRow[]>`
    insert into patient (organization_id, patient_id, email, name, metadata)
    values (${organizationId}, ${id}, ${email}, ${name}, ${sql.json(metadata)})
    on conflict (organization_id, patient_id) do nothing
    returning patient_id, email, name, metadata, created_at, seq::text`
  if (!row) throw apiError('conflict', 'external_id_already_exists', `A patient with patient_id '${id}' already exists`, 'patient_id')
  return patientView(row)
}

/**
 * Creates the patient if needed, else stores the email and name given (absent ones are kept): the
 * upsert of POST /patient-flows and POST /sessions. `sql` is usually the flow's transaction.
 */
export async function upsertPatient(
  sql: Sql,
  organizationId: string,
  input: { patient_id: string; email?: string | null; name?: string | null },
): Promise<void> {
  await sql`
    insert into patient (organization_id, patient_id, email, name)
    values (${organizationId}, ${input.patient_id}, ${input.email ?? null}, ${input.name ?? null})
    on conflict (organization_id, patient_id) do update
      set email = coalesce(excluded.email, patient.email), name = coalesce(excluded.name, patient.name)`
}

/** The patient, or 404 (also for another organization's). */
export async function getPatient(sql: Sql, organizationId: string, patientId: string): Promise<Patient> {
  const [row] = await sql<PatientRow[]>`
    select patient_id, email, name, metadata, created_at, seq::text from patient
    where organization_id = ${organizationId} and patient_id = ${patientId}`
  if (!row) throw notFound('patient', patientId, 'id')
  return patientView(row)
}

/** GET /patients/{id}: the patient with all its connections, newest first. */
export async function getPatientDetail(sql: Sql, organizationId: string, patientId: string): Promise<PatientDetail> {
  const [patient, connections] = await Promise.all([getPatient(sql, organizationId, patientId), patientConnections(sql, organizationId, patientId)])
  return { ...patient, connections: connections.map(patientConnectionView) }
}

/**
 * PUT /patients/{id}: a full replace. patient_id is required and must equal the URL's (it is immutable);
 * omitted fields are cleared (email and name to null, metadata to {}).
 */
export async function replacePatient(sql: Sql, organizationId: string, patientId: string, input: PatientInput): Promise<Patient> {
  if (input.patient_id !== patientId)
    throw badRequest(`patient_id '${input.patient_id}' in the body does not match '${patientId}' in the URL; patient_id cannot change`, 'patient_id')
  const email = checkEmail(input.email)
  const name = checkName(input.name)
  const metadata = checkMetadata(input.metadata)
  const [row] = await sql<PatientRow[]>`
    update patient set email = ${email}, name = ${name}, metadata = ${sql.json(metadata)}
    where organization_id = ${organizationId} and patient_id = ${patientId}
    returning patient_id, email, name, metadata, created_at, seq::text`
  if (!row) throw notFound('patient', patientId, 'id')
  return patientView(row)
}

/** GET /patients: newest first, filters patient_id and email (exact match). */
export async function listPatients(
  sql: Sql,
  organizationId: string,
  cursor: ListCursor,
  q: ListQuery,
  filters: { patient_id?: string; email?: string },
): Promise<ListPage<Patient>> {
  const rows = await sql<PatientRow[]>`
    select patient_id, email, name, metadata, created_at, seq::text from patient
    where organization_id = ${organizationId}
      ${filters.patient_id !== undefined ? sql`and patient_id = ${filters.patient_id}` : sql``}
      ${filters.email !== undefined ? sql`and email = ${filters.email}` : sql``}
      ${q.after ? sql`and (created_at, seq) < (${q.after.createdAt}, ${q.after.seq}::bigint)` : sql``}
    order by patient.created_at desc, patient.seq desc
    limit ${q.limit + 1}`
  return cursor.page(rows, q.limit, patientView)
}
