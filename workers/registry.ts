// The one place a job definition meets its processor. Each area contributes its registrations.
import type { Config } from '../shared/config'
import type { Sql } from '../shared/db/client'
import type { Repo } from '../shared/fhir/repo/repo'
import type { JobDefinition } from '../shared/jobs/definition'
import type { JobProgress } from '../shared/jobs/progress'
import type { Jobs } from '../shared/jobs/queues'
import type { Outbound } from '../shared/net/client'
import type { Redis } from '../shared/redis'
import type { SecretCipher } from '../shared/secrets/cipher'
import { TransactionBundleJob } from '../shared/jobs/transaction-bundle'
import { adminRegistrations } from './admin'
import { connectRegistrations } from './connect'
import { patientRegistrations } from './patients'
import { exportRegistrations } from './export'
import { bulkRegistrations } from './bulk'
import { transactionProcessor } from './transaction'

export interface WorkerDeps {
  repo: Repo
  sql: Sql
  config: Config
  secret: string
  /** For processors that enqueue further jobs. */
  jobs: Jobs
  /** Redis for processors that keep state there (absent in the embedded form). */
  redis?: Redis
  cipher: SecretCipher
  outbound: Outbound
}

export interface Registration {
  definition: JobDefinition
  concurrency: number
  process: (data: unknown, job: JobInfo) => Promise<unknown>
  /** Runs on this schedule (milliseconds) with this payload, once per cluster. */
  every?: { ms: number; data: unknown }
  /** How soon a job of a dead worker is taken over: its lock lasts lockMs, checked every stalledMs. */
  takeover?: { lockMs: number; stalledMs: number }
}

export interface JobInfo {
  id: string
  progress: (p: JobProgress) => void
  /** 1 for the first attempt. */
  attempt: number
  /** No retry follows when attempt == maxAttempts. */
  maxAttempts: number
}

export function registrations(deps: WorkerDeps): Registration[] {
  return [
    { definition: TransactionBundleJob, concurrency: 2, process: transactionProcessor(deps.repo, deps.config, deps.secret) },
    ...adminRegistrations(deps),
    ...patientRegistrations(deps),
    ...connectRegistrations(deps),
    ...exportRegistrations(deps),
    ...bulkRegistrations(deps),
  ]
}
