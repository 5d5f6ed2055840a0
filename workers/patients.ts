// Registrations of the Patient Connection API jobs: export page cache, flow expiry (issue 7).
import type { Registration, WorkerDeps } from './registry'

export function patientRegistrations(_deps: WorkerDeps): Registration[] {
  return []
}
