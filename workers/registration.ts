// What a worker registration is: a job definition, its processor and how it runs, and the
// dependencies processors are built from. registry.ts lists them; each area's file contributes its own.
import type { Config, JobTakeover } from '../shared/config'
import type { Sql } from '../shared/db/client'
import type { Repo } from '../shared/fhir/repo/repo'
import type { JobDefinition } from '../shared/jobs/definition'
import type { JobProgress } from '../shared/jobs/progress'
import type { Jobs } from '../shared/jobs/queues'
import type { Outbound } from '../shared/net/client'
import type { Redis } from '../shared/redis'
import type { SecretCipher } from '../shared/secrets/cipher'

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
  /** How soon a job of a dead worker is taken over (BullMQ's 30 s lock and check where unsaid); the
   *  JOB_LOCK_MS and JOB_STALLED_CHECK_MS settings override it. */
  takeover?: JobTakeover
  /** Times a job of a dead worker is handed to the processor again (BullMQ's maxStalledCount; default 1),
   *  which sees them in JobInfo.stalls and decides (a job that kills its worker is not run blindly again). */
  maxStalls?: number
}

export interface JobInfo {
  id: string
  progress: (p: JobProgress) => void
  /** 1 for the first attempt. */
  attempt: number
  /** No retry follows when attempt == maxAttempts. */
  maxAttempts: number
  /** Times a worker died (its lock lapsed) while running this job: 0 on a first run. In process (embedded
   *  form), the cuts after the first (in-process.ts). */
  stalls: number
  /** Times a run of this job was cut before it finished (its worker or process died or stopped). */
  restarts: number
}
