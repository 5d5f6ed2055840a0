// Registrations of the connect-flow jobs: source sync, webhook delivery (issue 8).
import type { Registration, WorkerDeps } from './registry'

export function connectRegistrations(_deps: WorkerDeps): Registration[] {
  return []
}
