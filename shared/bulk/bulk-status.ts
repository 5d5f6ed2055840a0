// What a Bulk Data status URL answers, for export and import alike: progress while the job runs (202,
// X-Progress, Retry-After), the manifest once it is done (200, with an Expires header), the job's error
// when it failed. https://hl7.org/fhir/uv/bulkdata/STU2/export.html#bulk-data-status-request
import type { AdminJobView } from '../jobs/admin-job'
import type { BulkJobHeader } from './bulk-job'

export type BulkStatus =
  | { kind: 'progress'; progress: string; retryAfter: number }
  | { kind: 'manifest'; manifest: unknown; expires: Date }
  | { kind: 'failed'; status: number; message: string }

/** Seconds a client is asked to wait before polling again. */
const RETRY_AFTER = 2

/** The URL of one of a job's files (any API node serves it, with the key that started the job). */
export function fileUrl(baseUrl: string, jobId: string, fileId: string): string {
  return `${baseUrl}/$bulk-file/${jobId}/${fileId}`
}

/** The status of a job that has not ended well: queued or running (with `progress`), or failed. */
export function unfinishedStatus(job: AdminJobView, progress: () => string): BulkStatus {
  if (job.state === 'failed') {
    const e = job.error as { status?: number; message?: string } | null
    return { kind: 'failed', status: e?.status && e.status >= 400 ? e.status : 500, message: e?.message ?? 'The job failed' }
  }
  return { kind: 'progress', progress: job.state === 'queued' ? 'queued' : progress(), retryAfter: RETRY_AFTER }
}

/** The manifest of a completed job: its header's transactionTime and request, and its files. */
export function manifestStatus(job: AdminJobView, ttlMs: number, output: unknown[], error: unknown[]): BulkStatus {
  const header = job.params as BulkJobHeader
  return {
    kind: 'manifest',
    expires: new Date(Date.parse(job.finishedAt as string) + ttlMs),
    manifest: { transactionTime: header.transactionTime, request: header.request, requiresAccessToken: true, output, error },
  }
}
