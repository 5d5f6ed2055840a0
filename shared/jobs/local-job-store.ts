// The rows of the embedded form's job queue (local_job, sql/migrations/0024): a job is recorded before
// enqueue() returns, claimed when a run begins (counting the runs), and its outcome kept for an hour.
import type { Sql } from '../db/client'
import type { JobDefinition } from './definition'
import type { JobStatus } from './progress'

/** Completed and failed jobs are answered for an hour (as the queues on Redis keep them). */
export const FINISHED_KEPT_MS = 3600_000

export interface PendingJob {
  id: string
  queue: string
  data: unknown
  /** Milliseconds until it may run (a delayed job), 0 when due. */
  delayMs: number
}

export class LocalJobStore {
  private pruned = 0

  constructor(private readonly sql: Sql) {}

  /** Records a job (committed when this resolves); false when a job with this id is recorded already. */
  async add(def: JobDefinition, id: string, data: unknown, delayMs = 0): Promise<boolean> {
    await this.prune()
    const runAt = new Date(Date.now() + Math.max(0, delayMs))
    const rows = await this.sql`
      insert into local_job (id, queue, payload, run_at) values (${id}, ${def.name}, ${payloadText(data)}, ${runAt})
      on conflict (id) do nothing
      returning id`
    return rows.length > 0
  }

  /** Marks a run begun; the number of runs begun so far (1 on the first), undefined when it is finished. */
  async claim(id: string): Promise<number | undefined> {
    const [row] = await this.sql<{ starts: number }[]>`
      update local_job set state = 'running', starts = starts + 1
      where id = ${id} and state in ('queued', 'running')
      returning starts`
    return row?.starts
  }

  async complete(def: JobDefinition, id: string, result: unknown): Promise<void> {
    const text = result === undefined ? null : def.resultBlob && typeof result === 'string' ? result : JSON.stringify(result)
    await this.sql`update local_job set state = 'completed', result = ${text}, finished_at = now() where id = ${id}`
  }

  async fail(id: string, error: NonNullable<JobStatus['error']>): Promise<void> {
    await this.sql`update local_job set state = 'failed', error = ${this.sql.json(error as never)}, finished_at = now() where id = ${id}`
  }

  async status(def: JobDefinition, id: string): Promise<JobStatus | undefined> {
    const [row] = await this.sql<{ state: JobStatus['state']; result: string | null; error: JobStatus['error'] | null }[]>`
      select state, result, error from local_job where id = ${id} and queue = ${def.name}`
    if (!row) return undefined
    if (row.state === 'completed') {
      const result = row.result === null ? undefined : def.resultBlob ? row.result : JSON.parse(row.result)
      return { id, state: 'completed', result }
    }
    if (row.state === 'failed') return { id, state: 'failed', error: row.error ?? undefined }
    // Recorded as running but not running here: cut by the last stop, it runs again (or is about to).
    return { id, state: 'queued' }
  }

  /** The jobs not finished, oldest first: queued, or cut while they ran. */
  async pending(): Promise<PendingJob[]> {
    const rows = await this.sql<{ id: string; queue: string; payload: string; delay_ms: number }[]>`
      select id, queue, payload, greatest(0, extract(epoch from run_at - now()) * 1000)::float8 as delay_ms
      from local_job where state in ('queued', 'running') order by created_at`
    return rows.map((r) => ({ id: r.id, queue: r.queue, data: JSON.parse(r.payload), delayMs: Number(r.delay_ms) }))
  }

  /** Drops the outcomes older than FINISHED_KEPT_MS, at most once a minute. */
  private async prune(): Promise<void> {
    if (Date.now() - this.pruned < 60_000) return
    this.pruned = Date.now()
    await this.sql`delete from local_job where finished_at < ${new Date(Date.now() - FINISHED_KEPT_MS)}`
  }
}

/** JSON of a payload; its byte fields (a Bundle as the API node received it, UTF-8) as the text they hold. */
function payloadText(data: unknown): string {
  const decoder = new TextDecoder()
  return JSON.stringify(data, (_k, v) => (v instanceof Uint8Array ? decoder.decode(v) : v))
}
