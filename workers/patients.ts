// Registrations of the Patient Connection API jobs: the scheduled flow expiry (which also drops saved
// Idempotency-Key responses past their 24 hours) and the background deletion of a deleted patient's
// FHIR records.
import { UnrecoverableError } from 'bullmq'
import { checkPayload } from '../shared/jobs/definition'
import { expireFlows } from '../shared/patients/flows'
import { purgeIdempotencyKeys } from '../shared/patients/idempotency'
import { FLOW_EXPIRY_EVERY_MS, FlowExpiryJob, PatientRecordsDeletionJob } from '../shared/patients/jobs'
import { deleteRecordsInBatches } from '../shared/patients/patient-deletion'
import type { Registration, WorkerDeps } from './registration'

export function patientRegistrations(deps: WorkerDeps): Registration[] {
  return [
    {
      definition: FlowExpiryJob,
      concurrency: 1,
      every: { ms: FLOW_EXPIRY_EVERY_MS, data: {} },
      process: async () => ({ expired: await expireFlows(deps.sql), idempotencyKeysPurged: await purgeIdempotencyKeys(deps.sql) }),
    },
    {
      definition: PatientRecordsDeletionJob,
      concurrency: 1,
      process: async (data) => {
        let payload: { fhirPatientIds: string[] }
        try {
          payload = checkPayload(PatientRecordsDeletionJob, data)
        } catch (err) {
          throw new UnrecoverableError((err as Error).message)
        }
        return { deleted: await deleteRecordsInBatches(deps.repo, payload.fhirPatientIds) }
      },
    },
  ]
}
