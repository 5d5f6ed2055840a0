// Runs one admin job for a worker: claims the row for this attempt, runs the kind's processor from the
// saved cursor, and records the outcome. A retried attempt (after a crash or an error) resumes from
// the last checkpoint; an attempt that lost the job to another cannot checkpoint any more.
import { analyzeGrownTables } from '../db/analyze'
import type { Sql, TxSql } from '../db/client'
import type { Repo } from '../fhir/repo/repo'
import { AppError, databaseError } from '../errors'
import { log } from '../log'
import { type AdminJobKind, type AdminJobRun, JobCancelled } from './admin-job'
import type { JobProgress } from './progress'

/** Times a job whose worker died is taken over (resuming from its cursor) before it fails. */
export const MAX_TAKEOVERS = 1

export interface RunOptions {
  /** No retry follows this attempt: an error marks the job failed. */
  finalAttempt: boolean
  /** Times a worker died while running this job. One takeover resumes from the cursor; a job whose worker
   *  died again (it may be what kills them) fails rather than running a third time. */
  stalls: number
  progress(p: JobProgress): void
}

export async function runAdminJob(repo: Repo, kinds: ReadonlyMap<string, AdminJobKind>, id: string, opts: RunOptions): Promise<unknown> {
  const sql = repo.sql
  const owner = crypto.randomUUID()
  const [row] = await sql`
    update admin_job set state = 'running', owner = ${owner}, started_at = coalesce(started_at, now()), updated_at = now()
    where id = ${id} and state in ('queued', 'running') and not cancel_requested
    returning kind, params, cursor, processed, total`
  if (!row) return settleUnclaimed(sql, id)
  const kind = kinds.get(row.kind)
  let reported = 0
  if (!kind) return finish(sql, id, owner, 'failed', { error: { status: 500, message: `No processor for admin job kind "${row.kind}"` } })
  if (opts.stalls >= MAX_TAKEOVERS + 1) {
    const message = `The worker running this job stopped ${opts.stalls} times before it finished (for example out of memory); it is not run again. Work done up to its last checkpoint is kept.`
    log.warn('admin job failed: its workers died', { id, stalls: opts.stalls })
    return finish(sql, id, owner, 'failed', { error: { status: 500, message } })
  }
  const run: AdminJobRun = {
    id,
    sql,
    repo,
    cursor: row.cursor ?? undefined,
    processed: Number(row.processed),
    async checkpoint({ cursor, processed, total }, tx?: TxSql) {
      const q = (tx ?? sql) as Sql
      const [r] = await q`
        update admin_job set cursor = ${cursor === undefined ? null : q.json(cursor as never)}, processed = ${processed},
          total = coalesce(${total ?? null}::bigint, total), updated_at = now()
        where id = ${id} and owner = ${owner}
        returning cancel_requested, total`
      if (!r) throw new Error(`admin job ${id} was taken over by another attempt`)
      // The row is the progress anyone reads; BullMQ's copy (a Redis script each) at most twice a second:
      // a bulk import checkpoints every few milliseconds.
      if (Date.now() - reported > 500) {
        reported = Date.now()
        opts.progress({ done: processed, total: Number(r.total ?? 0) })
      }
      if (r.cancel_requested) throw new JobCancelled()
    },
  }
  try {
    const result = await kind.run(run, row.params)
    await finish(sql, id, owner, 'completed', { result })
    // A reindex, an import or an expunge changes many rows: statistics follow (db/analyze.ts).
    await analyzeGrownTables(sql, { vacuum: true })
    return result
  } catch (err) {
    if (err instanceof JobCancelled) {
      await finish(sql, id, owner, 'cancelled', {})
      await analyzeGrownTables(sql, { vacuum: true })
      return { cancelled: true }
    }
    const e = err as Error
    // A statement PostgreSQL refused for a value of the job's input (a data exception, a storage limit)
    // fails the same way at every attempt: the job fails now, as the 400 a request would get.
    const refused = databaseError(err)
    const known = err instanceof AppError ? err : refused?.category === 'invalid' ? refused : undefined
    const permanent = known !== undefined && known.status < 500
    if (opts.finalAttempt || permanent) {
      await finish(sql, id, owner, 'failed', { error: { status: known?.status ?? 500, message: e.message } })
    } else {
      log.warn('admin job attempt failed; it will resume from its cursor', { id, err: e.message })
    }
    throw err
  }
}

async function finish(sql: Sql, id: string, owner: string, state: 'completed' | 'failed' | 'cancelled', out: { result?: unknown; error?: unknown }) {
  await sql`
    update admin_job set state = ${state}, result = ${out.result === undefined ? null : sql.json(out.result as never)},
      error = ${out.error === undefined ? null : sql.json(out.error as never)}, finished_at = now(), updated_at = now()
    where id = ${id} and owner = ${owner}`
  return out.result
}

/** A job this attempt could not claim: cancelled before it ran, already finished, or gone. */
async function settleUnclaimed(sql: Sql, id: string): Promise<unknown> {
  const [row] = await sql`
    update admin_job set state = 'cancelled', finished_at = now(), updated_at = now()
    where id = ${id} and state in ('queued', 'running') and cancel_requested
    returning id`
  if (row) return { cancelled: true }
  const [done] = await sql`select state, result from admin_job where id = ${id}`
  return done?.result ?? undefined
}
