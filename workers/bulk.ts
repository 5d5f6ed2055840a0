// Bulk Data on the workers: the $export and $import job kinds (run through the admin queue, like every
// admin job) and the scheduled purge of expired or deleted jobs' files.
import type { AdminJobKind } from '../shared/jobs/admin-job'
import { purgeBulkFiles } from '../shared/bulk/bulk-job'
import { exportJobKind } from '../shared/bulk/export-job'
import { type BulkFileStore, bulkFileStore } from '../shared/bulk/file-store'
import { importJobKind } from '../shared/bulk/import-job'
import { openInput } from '../shared/bulk/ndjson-source'
import { BulkPurgeJob } from '../shared/bulk/purge-job'
import { purgeUploads } from '../shared/bulk/upload'
import type { Registration, WorkerDeps } from './registration'

export function bulkJobKinds(deps: WorkerDeps, store: BulkFileStore = bulkFileStore(deps.sql, deps.config)): AdminJobKind[] {
  return [
    exportJobKind(store, deps.config.bulk.exportFileMaxBytes) as AdminJobKind,
    importJobKind(store, deps.config.bulk, openInput(deps.config, store)) as AdminJobKind,
  ]
}

export function bulkRegistrations(deps: WorkerDeps): Registration[] {
  const store = bulkFileStore(deps.sql, deps.config)
  return [
    {
      definition: BulkPurgeJob,
      concurrency: 1,
      every: { ms: 10 * 60_000, data: {} },
      process: async () => ({
        purged: await purgeBulkFiles(deps.sql, store, deps.config.bulk.fileTtlMs),
        uploads: await purgeUploads(deps.sql, store, deps.config.bulk.fileTtlMs),
      }),
    },
  ]
}
