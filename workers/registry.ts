// The one place a job definition meets its processor.
import type { Config } from '../shared/config'
import type { Repo } from '../shared/fhir/repo/repo'
import type { JobDefinition } from '../shared/jobs/definition'
import type { JobProgress } from '../shared/jobs/progress'
import { TransactionBundleJob } from '../shared/jobs/transaction-bundle'
import { transactionProcessor } from './transaction'

export interface Registration {
  definition: JobDefinition
  concurrency: number
  process: (data: unknown, job: { id: string; progress: (p: JobProgress) => void }) => Promise<unknown>
}

export function registrations(repo: Repo, config: Config, secret: string): Registration[] {
  return [{ definition: TransactionBundleJob, concurrency: 2, process: transactionProcessor(repo, config, secret) }]
}
