// DELETE /patients/{id}: removes the patient and, by the schema's cascades, its flows, sessions and
// connections; logically deletes its stored FHIR records (patient-records.ts) in the same transaction,
// or in a background job when there are more than INLINE_RECORDS. Irreversible.
import type { Repo } from '../fhir/repo/repo'
import type { Jobs } from '../jobs/queues'
import { notFound } from './api-error'
import { PatientRecordsDeletionJob } from './jobs'
import { countPatientRecords, deletePatientRecords, linkedFhirPatients } from './patient-records'

export interface PatientTombstone {
  id: string
  resource_type: 'patient'
  deleted: true
}

export const INLINE_RECORDS = 1000
export const RECORDS_BATCH = 500

export async function deletePatient(deps: { repo: Repo; jobs: Jobs }, organizationId: string, patientId: string): Promise<PatientTombstone> {
  const background = await deps.repo.transaction(async (w) => {
    const rows = await w.tx`delete from patient where organization_id = ${organizationId} and patient_id = ${patientId} returning patient_id`
    if (rows.length === 0) throw notFound('patient', patientId, 'id')
    const fhirPatients = await linkedFhirPatients(w.tx, organizationId, patientId)
    if (fhirPatients.length === 0) return undefined
    if ((await countPatientRecords(w.tx, fhirPatients)) > INLINE_RECORDS) return fhirPatients
    await deletePatientRecords(w, fhirPatients, INLINE_RECORDS + 1)
    return undefined
  })
  if (background) await deps.jobs.enqueue(PatientRecordsDeletionJob, { fhirPatientIds: background })
  return { id: patientId, resource_type: 'patient', deleted: true }
}

/** The job's work: batches of RECORDS_BATCH, each its own transaction, until none are left. */
export async function deleteRecordsInBatches(repo: Repo, fhirPatientIds: string[]): Promise<number> {
  let total = 0
  for (;;) {
    const n = await repo.transaction((w) => deletePatientRecords(w, fhirPatientIds, RECORDS_BATCH))
    total += n
    if (n < RECORDS_BATCH) return total
  }
}
