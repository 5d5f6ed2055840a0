// Registrations of the admin jobs: reindex, expunge, terminology (issue 6).
import type { Registration, WorkerDeps } from './registry'

export function adminRegistrations(_deps: WorkerDeps): Registration[] {
  return []
}
