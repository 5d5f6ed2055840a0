// The one place a job definition meets its processor. Each area contributes its registrations
// (registration.ts says what one is).
import type { Registration, WorkerDeps } from './registration'
import { TransactionBundleJob } from '../shared/jobs/transaction-bundle'
import { adminRegistrations } from './admin'
import { connectRegistrations } from './connect'
import { patientRegistrations } from './patients'
import { exportRegistrations } from './export'
import { bulkRegistrations } from './bulk'
import { transactionProcessor } from './transaction'

export function registrations(deps: WorkerDeps): Registration[] {
  return [
    { definition: TransactionBundleJob, concurrency: 2, maxStalls: 1, process: transactionProcessor(deps.repo, deps.config, deps.secret) },
    ...adminRegistrations(deps),
    ...patientRegistrations(deps),
    ...connectRegistrations(deps),
    ...exportRegistrations(deps),
    ...bulkRegistrations(deps),
  ]
}
