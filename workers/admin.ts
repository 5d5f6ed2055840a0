// Registrations of the admin jobs: one queue carries every admin job kind (reindex, expunge,
// terminology...), whose durable state lives in admin_job; plus the scheduled reindexing pass.
import { AdminJob, type AdminJobKind } from '../shared/jobs/admin-job'
import { MAX_TAKEOVERS, runAdminJob } from '../shared/jobs/admin-runner'
import { checkPayload } from '../shared/jobs/definition'
import { analyzeGrownTables } from '../shared/db/analyze'
import { ReindexPassJob } from '../shared/jobs/reindex-pass'
import { ReindexJobKind } from '../shared/fhir/reindex/reindex-job'
import { ExpungeJobKind } from '../shared/fhir/repo/expunge-job'
import { TerminologyRebuildJobKind } from '../shared/fhir/terminology/rebuild-job'
import { bulkJobKinds } from './bulk'
import type { Registration, WorkerDeps } from './registration'

/** Every admin job kind, by name: the bulk data kinds need the worker's file store and settings. */
export function adminJobKinds(deps: WorkerDeps): ReadonlyMap<string, AdminJobKind> {
  return new Map([ReindexJobKind, ExpungeJobKind, TerminologyRebuildJobKind, ...bulkJobKinds(deps)].map((k) => [k.kind, k as AdminJobKind]))
}

export function adminRegistrations(deps: WorkerDeps): Registration[] {
  const kinds = adminJobKinds(deps)
  return [
    {
      definition: AdminJob,
      concurrency: 1,
      // A killed worker's job is taken over within ~15 s and resumes from its cursor, once: the processor
      // fails it in admin_job when its worker dies again (so BullMQ hands it over one more time).
      takeover: { lockMs: 10_000, stalledCheckMs: 5_000 },
      maxStalls: MAX_TAKEOVERS + 1,
      process: (data, job) =>
        runAdminJob(deps.repo, kinds, checkPayload(AdminJob, data).jobId, {
          finalAttempt: job.attempt >= job.maxAttempts,
          stalls: job.stalls,
          progress: job.progress,
        }),
    },
    {
      definition: ReindexPassJob,
      concurrency: 1,
      every: { ms: 10_000, data: {} },
      process: async () => {
        const indexed = (await deps.repo.performReindexingPass()) ?? 0
        if (indexed > 0) await analyzeGrownTables(deps.repo.sql, { vacuum: true })
        return { indexed }
      },
    },
  ]
}
