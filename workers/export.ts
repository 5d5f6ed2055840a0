// Registration of the export-cache job: the page cache of a large $everything export, built on a
// worker (shared/export/export-cache-job.ts).
import { exportCache } from '../shared/export/everything'
import { buildExportCache, ExportCacheJob } from '../shared/export/export-cache-job'
import { checkPayload } from '../shared/jobs/definition'
import type { Registration, WorkerDeps } from './registration'

export function exportRegistrations(deps: WorkerDeps): Registration[] {
  const cache = exportCache(deps.sql, deps.redis, deps.config.queuePrefix)
  return [{ definition: ExportCacheJob, concurrency: 2, process: (data) => buildExportCache(deps.sql, cache, checkPayload(ExportCacheJob, data)) }]
}
