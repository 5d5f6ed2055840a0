// Bulk Data jobs are admin jobs (shared/jobs/admin-job.ts: a row with state, progress, checkpoint,
// cancel, resume; one BullMQ queue): this module starts them, finds them for their requester, deletes
// them (cancel plus files) and purges expired ones. A job belongs to the API key that started it: its
// status and files answer that key only (IG: "requiresAccessToken"), and 404 to any other.
import type { Sql, TxSql } from '../db/client'
import { AppError, throttled } from '../errors'
import { type AdminJobView, adminJob, cancelAdminJob, isJobId, startAdminJob } from '../jobs/admin-job'
import type { Jobs } from '../jobs/queues'
import { log } from '../log'
import type { BulkFileStore } from './file-store'

export const BULK_EXPORT = 'bulk-export'
export const BULK_IMPORT = 'bulk-import'
export type BulkKind = typeof BULK_EXPORT | typeof BULK_IMPORT

/** What every bulk job records besides its own parameters. */
export interface BulkJobHeader {
  /** The API key id that started it (null when authentication is disabled). */
  owner: string | null
  /** The kick-off URL (for POST, without its parameters), as the manifest's `request`. */
  request: string
  /** The instant the job's data is consistent at (export), or that it was asked (import). */
  transactionTime: string
  /** The FHIR base the request came to: the base its search filters read references against. */
  baseUrl: string
}

/**
 * Starts a bulk job, at most `maxActive` of a kind queued or running for one API key (for one owner:
 * with authentication disabled, for all): more is 429 with Retry-After, before anything is recorded.
 * Each export reads, and each import writes, the whole of what it names: without a cap one key could
 * queue any number and hold every worker and the disk. Kick-offs of one key are serialised by an advisory
 * lock over the count and the insert, so that a burst of them cannot all pass the count.
 */
export async function startBulkJob(sql: Sql, jobs: Jobs, kind: BulkKind, params: BulkJobHeader, maxActive: number): Promise<string> {
  const admit = async (tx: TxSql) => {
    await tx`select pg_advisory_xact_lock(hashtext(${`bulk-job ${kind} ${params.owner}`}))`
    const [{ n }] = await tx<{ n: number }[]>`
      select count(*)::int as n from admin_job
      where kind = ${kind} and state in ('queued', 'running') and not cancel_requested
        and params ->> 'owner' is not distinct from ${params.owner}`
    if (n >= maxActive) {
      const what = kind === BULK_EXPORT ? 'exports' : 'imports'
      throw throttled(
        `Too many ${what} at once: at most ${maxActive} of one API key are queued or running (BULK_MAX_ACTIVE_PER_KEY); wait for one to end, or DELETE its status URL`,
        ACTIVE_RETRY_S,
      )
    }
  }
  return (await startAdminJob(sql, jobs, kind, params, undefined, admit)).id
}

/** The Retry-After of a kick-off refused for the jobs a key has running (seconds). */
const ACTIVE_RETRY_S = 30

/**
 * The job for a status or file request: 404 when it is unknown, of another kind, another key's, deleted
 * (DELETE on its status URL) or expired; files are kept `ttlMs` after the job ends.
 */
export async function bulkJobFor(sql: Sql, id: string, kind: BulkKind, owner: string | null | undefined, ttlMs: number): Promise<AdminJobView> {
  const job = await adminJob(sql, id)
  const header = job?.params as BulkJobHeader | undefined
  if (!job || job.kind !== kind || (owner !== undefined && header?.owner !== owner))
    throw new AppError('not-found', `No ${kind === BULK_EXPORT ? 'export' : 'import'} job ${id} for this API key`)
  if (job.cancelRequested) throw new AppError('not-found', `Job ${id} was deleted`)
  if (job.finishedAt && Date.parse(job.finishedAt) + ttlMs < Date.now()) throw new AppError('not-found', `Job ${id} and its files have expired`)
  return job
}

/** The kind of a job a file request names (an import's error files need another scope than an export's). */
export async function bulkKindOf(sql: Sql, id: string): Promise<BulkKind> {
  const [row] = isJobId(id) ? await sql<{ kind: string }[]>`select kind from admin_job where id = ${id}` : []
  return row?.kind === BULK_IMPORT ? BULK_IMPORT : BULK_EXPORT
}

/**
 * DELETE on a status URL: a running job is cancelled, and its files (written so far, or all of them)
 * removed; the status URL then answers 404 (IG "Delete a Bulk Data Request"). The cancel flag is the
 * mark of a deleted job, finished or not.
 */
export async function deleteBulkJob(sql: Sql, store: BulkFileStore, job: AdminJobView): Promise<void> {
  if (job.state === 'queued' || job.state === 'running') await cancelAdminJob(sql, job.id).catch(() => {}) // it may just have ended
  await sql`update admin_job set cancel_requested = true, updated_at = now() where id = ${job.id}`
  await store.removeJob(job.id)
  await sql`delete from bulk_import_error where job_id = ${job.id}`
}

/**
 * Removes the files of bulk jobs that ended more than `ttlMs` ago or were deleted, once each (the job
 * row stays, marked purged in its result). Returns how many jobs were purged.
 */
export async function purgeBulkFiles(sql: Sql, store: BulkFileStore, ttlMs: number): Promise<number> {
  const rows = await sql<{ id: string }[]>`
    select id from admin_job
    where kind in (${BULK_EXPORT}, ${BULK_IMPORT}) and state in ('completed', 'failed', 'cancelled')
      and (finished_at < now() - ${ttlMs} * interval '1 millisecond' or cancel_requested)
      and not coalesce((result ->> 'purged')::boolean, false)
    order by finished_at limit 1000`
  for (const { id } of rows) {
    try {
      await store.removeJob(id)
      await sql`delete from bulk_import_error where job_id = ${id}`
      await sql`update admin_job set result = coalesce(result, '{}'::jsonb) || '{"purged": true}'::jsonb where id = ${id}`
    } catch (err) {
      log.warn('bulk files not purged; next pass retries', { id, err: String(err) })
    }
  }
  return rows.length
}
