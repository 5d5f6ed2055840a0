// The status URL of an export: 202 with X-Progress and Retry-After while it runs, 200 with the manifest
// once it is done, the job's error when it failed.
// https://hl7.org/fhir/uv/bulkdata/STU2/export.html#bulk-data-status-request
import type { AdminJobView } from '../jobs/admin-job'
import type { ExportJobParams, ExportResult } from './export-job'

export type BulkStatus =
  | { kind: 'progress'; progress: string; retryAfter: number }
  | { kind: 'manifest'; manifest: unknown; expires: Date }
  | { kind: 'failed'; status: number; message: string }

/** The URL of one of a job's files (any API node serves it, with the key that started the job). */
export function fileUrl(baseUrl: string, jobId: string, fileId: string): string {
  return `${baseUrl}/$bulk-file/${jobId}/${fileId}`
}

export function exportStatus(job: AdminJobView, baseUrl: string, ttlMs: number): BulkStatus {
  if (job.state === 'completed') {
    const p = job.params as ExportJobParams
    const r = job.result as ExportResult
    return {
      kind: 'manifest',
      expires: new Date(Date.parse(job.finishedAt as string) + ttlMs),
      manifest: {
        transactionTime: p.transactionTime,
        request: p.request,
        requiresAccessToken: true,
        output: r.files.map((f) => ({ type: f.type, url: fileUrl(baseUrl, job.id, f.id), count: f.count })),
        error: [],
      },
    }
  }
  if (job.state === 'failed') return failedStatus(job)
  const done = `${job.processed.toLocaleString('en-US')} resources exported`
  return {
    kind: 'progress',
    progress: job.percent !== null && job.state === 'running' ? `${job.percent}% (${done})` : job.state === 'queued' ? 'queued' : done,
    retryAfter: 2,
  }
}

export function failedStatus(job: AdminJobView): BulkStatus {
  const e = job.error as { status?: number; message?: string } | null
  return { kind: 'failed', status: e?.status && e.status >= 400 ? e.status : 500, message: e?.message ?? 'The job failed' }
}
