// Jobs of the patient API, declared once: the periodic flow expiry and the background deletion of a
// deleted patient's FHIR records (when too many to delete inline).
import { Type } from '@sinclair/typebox'
import { defineJob } from '../jobs/definition'

/** Marks open flows and sessions past expires_at as expired. Scheduled every FLOW_EXPIRY_EVERY_MS. */
export const FlowExpiryJob = defineJob('patient-flow-expiry', Type.Object({}), { removeOnComplete: 100, removeOnFail: 100 })

export const FLOW_EXPIRY_EVERY_MS = 60_000

/** Logically deletes the records (Patient compartments) of the given FHIR Patients, in batches. */
export const PatientRecordsDeletionJob = defineJob(
  'patient-records-deletion',
  Type.Object({ fhirPatientIds: Type.Array(Type.String(), { minItems: 1 }) }),
  // Each batch commits on its own and the job resumes where the records left off: retrying is safe.
  { attempts: 5, backoff: { type: 'exponential', delay: 2000 } },
)
