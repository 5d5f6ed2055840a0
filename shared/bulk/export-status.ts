// The status URL of an export: the manifest lists one entry per file (a type may have several).
// https://hl7.org/fhir/uv/bulkdata/STU2/export.html#response---complete-status
import type { AdminJobView } from '../jobs/admin-job'
import { type BulkStatus, fileUrl, manifestStatus, unfinishedStatus } from './bulk-status'
import type { ExportFile, ExportResult } from './export-job'

export function exportStatus(job: AdminJobView, baseUrl: string, ttlMs: number): BulkStatus {
  if (job.state !== 'completed')
    return unfinishedStatus(job, () => {
      const done = `${job.processed.toLocaleString('en-US')} resources exported`
      return job.percent !== null ? `${job.percent}% (${done})` : done
    })
  const r = job.result as ExportResult
  return manifestStatus(
    job,
    ttlMs,
    r.files.map((f) => ({ type: f.type, url: fileUrl(baseUrl, job.id, f.id), count: f.count })),
    [],
  )
}

/** An export's file by id. */
export function exportFile(result: unknown, fileId: string): ExportFile | undefined {
  return (result as ExportResult | null)?.files?.find((f) => f.id === fileId)
}
