// Admin jobs: long work (reindex, expunge, terminology) recorded in `admin_job` with its progress and
// resume cursor, carried by one BullMQ queue. Any node can start, read and cancel a job; the same
// work asked twice while it runs is one job (dedupe key under a unique index).
import { Type } from '@sinclair/typebox'
import type { Sql, TxSql } from '../db/client'
import type { Repo } from '../fhir/repo/repo'
import { AppError } from '../errors'
import { defineJob } from './definition'
import type { Jobs } from './queues'

/** The BullMQ job: only the id of the admin_job row. Retried with backoff; a retry resumes at the cursor. */
export const AdminJob = defineJob('admin', Type.Object({ jobId: Type.String({ pattern: '^[0-9a-f-]{36}$' }) }), {
  attempts: 5,
  backoff: { type: 'exponential', delay: 2000 },
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: { age: 7 * 24 * 3600 },
})

export type AdminJobState = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled'

/**
 * One kind of admin job: its processor, run with the saved cursor (undefined on the first run).
 * Kinds are registered in workers/admin.ts (adminJobKinds); start one with startAdminJob(kind).
 */
export interface AdminJobKind<P = any> {
  kind: string
  run(run: AdminJobRun, params: P): Promise<unknown>
}

export interface AdminJobRun {
  id: string
  sql: Sql
  /** The resource store (for kinds that notify caches of what they changed). */
  repo: Repo
  /** The cursor of the last checkpoint, or undefined when the job starts from the beginning. */
  cursor: unknown
  processed: number
  /**
   * Saves progress and the resume cursor. Called with the batch's transaction, it commits with the
   * batch, so a resumed job neither redoes nor skips work. Throws JobCancelled when cancel was asked
   * (inside a transaction, that batch rolls back).
   */
  checkpoint(p: { cursor: unknown; processed: number; total?: number }, tx?: TxSql): Promise<void>
}

export class JobCancelled extends Error {
  constructor() {
    super('job cancelled')
  }
}

export interface AdminJobView {
  id: string
  kind: string
  state: AdminJobState
  params: unknown
  processed: number
  total: number | null
  percent: number | null
  /** The last checkpoint's cursor: where the job is (a bulk import's per-file progress). */
  cursor: unknown
  result: unknown
  error: unknown
  cancelRequested: boolean
  createdAt: string
  startedAt: string | null
  finishedAt: string | null
}

/**
 * Records and queues a job; when a queued or running job has the same dedupe key, answers that one
 * instead (`existing: true`). `admit` runs first in the transaction that inserts the row (a check that
 * must see the jobs already recorded, e.g. a cap per requester, under a lock it takes): it throws to
 * refuse. The job is queued once the row has committed.
 */
export async function startAdminJob(
  sql: Sql,
  jobs: Jobs,
  kind: string,
  params: unknown,
  dedupeKey?: string,
  admit?: (tx: TxSql) => Promise<void>,
): Promise<{ id: string; existing: boolean }> {
  const id = crypto.randomUUID()
  const insert = (q: Sql) => q<{ id: string }[]>`
    insert into admin_job (id, kind, params, dedupe_key) values (${id}, ${kind}, ${q.json(params as never)}, ${dedupeKey ?? null})
    on conflict (dedupe_key) where state in ('queued', 'running') do nothing
    returning id`
  const [row] = admit
    ? await sql.begin(async (tx) => {
        await admit(tx)
        return insert(tx as unknown as Sql)
      })
    : await insert(sql)
  if (!row) {
    const [existing] = await sql<{ id: string }[]>`select id from admin_job where dedupe_key = ${dedupeKey ?? null} and state in ('queued', 'running')`
    if (existing) return { id: existing.id, existing: true }
    return startAdminJob(sql, jobs, kind, params, dedupeKey, admit) // it finished in between
  }
  await jobs.enqueue(AdminJob, { jobId: id }, { jobId: id })
  return { id, existing: false }
}

/** A job's id has the shape of a UUID (the column's type): any other text names no job, and is not sent. */
export function isJobId(id: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)
}

export async function adminJob(sql: Sql, id: string): Promise<AdminJobView | undefined> {
  if (!isJobId(id)) return undefined
  const [row] = await sql`select * from admin_job where id = ${id}`
  return row ? viewOf(row) : undefined
}

export async function listAdminJobs(sql: Sql, filter: { state?: string; kind?: string; limit: number }): Promise<AdminJobView[]> {
  const rows = await sql`
    select * from admin_job
    where ${filter.state ? sql`state = ${filter.state}` : sql`true`} and ${filter.kind ? sql`kind = ${filter.kind}` : sql`true`}
    order by created_at desc, id limit ${filter.limit}`
  return rows.map(viewOf)
}

/** Asks a job to stop: a queued job is cancelled at once, a running one at its next checkpoint. */
export async function cancelAdminJob(sql: Sql, id: string): Promise<AdminJobView> {
  const job = await adminJob(sql, id)
  if (!job) throw new AppError('not-found', `Job ${id} not found`)
  if (job.state === 'completed' || job.state === 'failed' || job.state === 'cancelled') throw new AppError('conflict', `Job ${id} is already ${job.state}`)
  await sql`
    update admin_job set cancel_requested = true, updated_at = now(),
      state = case when state = 'queued' then 'cancelled' else state end,
      finished_at = case when state = 'queued' then now() else finished_at end
    where id = ${id}`
  return (await adminJob(sql, id)) as AdminJobView
}

function viewOf(r: any): AdminJobView {
  const processed = Number(r.processed)
  const total = r.total === null ? null : Number(r.total)
  return {
    id: r.id,
    kind: r.kind,
    state: r.state,
    params: r.params,
    processed,
    total,
    percent: total ? Math.min(100, Math.round((processed / total) * 1000) / 10) : r.state === 'completed' ? 100 : null,
    cursor: r.cursor,
    result: r.result,
    error: r.error,
    cancelRequested: r.cancel_requested,
    createdAt: r.created_at.toISOString(),
    startedAt: r.started_at?.toISOString() ?? null,
    finishedAt: r.finished_at?.toISOString() ?? null,
  }
}

/**
 * Waits for a job to finish (any node may run it), polling its row; undefined when it is still going
 * after `timeoutMs`.
 */
export async function waitForAdminJob(sql: Sql, id: string, timeoutMs: number): Promise<AdminJobView | undefined> {
  const until = Date.now() + timeoutMs
  for (let delay = 10; ; delay = Math.min(delay * 2, 250)) {
    const job = await adminJob(sql, id)
    if (!job) throw new AppError('not-found', `Job ${id} not found`)
    if (job.state === 'completed' || job.state === 'failed' || job.state === 'cancelled') return job
    if (Date.now() > until) return undefined
    await Bun.sleep(delay)
  }
}
