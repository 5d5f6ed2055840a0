// The status URL of an import (HAPI's $import-poll-status): 202 with X-Progress while it runs, then 200
// with a manifest of what each input gave (resources created, updated, unchanged) and the error files
// (one OperationOutcome per line not stored, its line number in the location).
import type { AdminJobView } from '../jobs/admin-job'
import { type BulkStatus, fileUrl, manifestStatus, unfinishedStatus } from './bulk-status'
import type { ErrorFile, ImportResult, InputProgress } from './import-job'

export function importStatus(job: AdminJobView, baseUrl: string, ttlMs: number): BulkStatus {
  if (job.state !== 'completed') return unfinishedStatus(job, () => progressText(job))
  const r = job.result as ImportResult
  return manifestStatus(
    job,
    ttlMs,
    r.inputs.map((i) => ({
      type: i.type,
      inputUrl: i.url,
      count: i.created + i.updated + i.unchanged,
      created: i.created,
      updated: i.updated,
      unchanged: i.unchanged,
      ...(i.failure ? { failure: i.failure } : {}),
    })),
    r.errorFiles.map((f) => ({ type: 'OperationOutcome', inputUrl: r.inputs[f.input].url, url: fileUrl(baseUrl, job.id, f.id), count: f.count })),
  )
}

/** An import's error file by id. */
export function importFile(result: unknown, fileId: string): ErrorFile | undefined {
  return (result as ImportResult | null)?.errorFiles?.find((f) => f.id === fileId)
}

/** `input 3 of 16 (Observation): 45% of its bytes; 90,000 lines read`, from the job's checkpoint. */
function progressText(job: AdminJobView): string {
  const c = job.cursor as { input: number; inputs: InputProgress[] } | null
  if (!c) return 'starting'
  const lines = c.inputs.reduce((n, i) => n + i.lines, 0).toLocaleString('en-US')
  const current = c.inputs[Math.min(c.input, c.inputs.length - 1)]
  const share = current?.length ? ` ${Math.floor((100 * current.bytes) / current.length)}% of its bytes;` : ''
  if (c.input >= c.inputs.length) return `writing error files; ${lines} lines read`
  return `input ${c.input + 1} of ${c.inputs.length} (${current.type}):${share} ${lines} lines read`
}
