// The producer side of the job queues: enqueue by definition, wait for a result, read a job's status
// from any node. With no Redis (embedded form) jobs run in this process through the same definitions
// (in-process.ts).
import { Queue, QueueEvents } from 'bullmq'
import { log } from '../log'
import type { Redis } from '../redis'
import { type BlobStore, restoreResult, stashBlobs } from './blobs'
import { checkPayload, type JobDefinition, type PayloadOf } from './definition'
import type { JobProgress, JobStatus } from './progress'

export interface Jobs {
  /** Enqueues and returns the job id; a given `jobId` already in the queue is not added twice. Once this
   *  resolves the job is kept (in Redis, or in the embedded database) until it runs; `delayMs`: not before. */
  enqueue<D extends JobDefinition>(def: D, data: PayloadOf<D>, opts?: { jobId?: string; delayMs?: number }): Promise<string>
  /** Enqueues and resolves with the job's result (rejects with its error). */
  run<D extends JobDefinition>(def: D, data: PayloadOf<D>): Promise<unknown>
  status(def: JobDefinition, id: string): Promise<JobStatus | undefined>
  /** Runs the job every `everyMs` with `data`, once per cluster (a BullMQ job scheduler). */
  schedule<D extends JobDefinition>(def: D, everyMs: number, data: PayloadOf<D>): Promise<void>
  /** The BullMQ queue of a definition (absent in process); for dashboards and metrics. */
  queue?(def: JobDefinition): Queue
  close(): Promise<void>
}

/**
 * BullMQ queues on Redis. `events` is a dedicated connection (QueueEvents blocks on it); `blobs` holds
 * the large texts of jobs beside them (blobs.ts).
 */
export function redisJobs(connection: Redis, events: Redis, prefix: string, blobs: BlobStore): Jobs {
  const queues = new Map<string, Queue>()
  const listeners = new Map<string, QueueEvents>()
  const queue = (def: JobDefinition) => {
    let q = queues.get(def.name)
    if (!q) queues.set(def.name, (q = new Queue(def.name, { connection, prefix, defaultJobOptions: def.options })))
    return q
  }
  const queueEvents = async (def: JobDefinition) => {
    let e = listeners.get(def.name)
    if (!e) {
      listeners.set(def.name, (e = new QueueEvents(def.name, { connection: events.duplicate(), prefix })))
      await e.waitUntilReady()
    }
    return e
  }
  return {
    // Job ids are UUIDs, not BullMQ's counter: the counter restarts when Redis loses its data, and the
    // exactly-once ledger (bundle_job) would then take a new job for an old one.
    async enqueue(def, data, opts) {
      const jobId = opts?.jobId ?? crypto.randomUUID()
      const payload = await stashBlobs(blobs, def, jobId, checkPayload(def, data))
      const job = await queue(def).add(def.name, payload, { jobId, ...(opts?.delayMs ? { delay: Math.max(0, opts.delayMs) } : {}) })
      return job.id as string
    },
    async run(def, data) {
      const events = await queueEvents(def)
      const jobId = crypto.randomUUID()
      const job = await queue(def).add(def.name, await stashBlobs(blobs, def, jobId, checkPayload(def, data)), { jobId })
      return restoreResult(blobs, def, jobId, await job.waitUntilFinished(events))
    },
    async status(def, id) {
      // The state first, then the job: read the other way round, a job finishing in between would look
      // completed with no result yet.
      const state = await queue(def).getJobState(id)
      if (state === 'unknown') return undefined
      const job = await queue(def).getJob(id)
      if (!job) return undefined
      const progress = typeof job.progress === 'object' ? (job.progress as unknown as JobProgress) : undefined
      if (state === 'completed') return { id, state: 'completed', progress, result: await restoreResult(blobs, def, id, job.returnvalue) }
      if (state === 'failed') return { id, state: 'failed', progress, error: parseFailure(job.failedReason) }
      return { id, state: state === 'active' ? 'running' : 'queued', progress }
    },
    async schedule(def, everyMs, data) {
      await queue(def).upsertJobScheduler(`${def.name}-every`, { every: everyMs }, { name: def.name, data: checkPayload(def, data) })
    },
    queue,
    async close() {
      await Promise.all([...listeners.values()].map((e) => e.close()))
      await Promise.all([...queues.values()].map((q) => q.close()))
    },
  }
}

/** A processor's error as it travels through the queue: status and message, JSON in failedReason. */
export function failureOf(err: unknown): NonNullable<JobStatus['error']> {
  const e = err as { status?: number; message?: string; jobFailure?: JobStatus['error'] }
  if (e?.jobFailure) return e.jobFailure
  if (typeof e?.status === 'number') return { status: e.status, message: String(e.message) }
  return parseFailure(String(e?.message ?? err))
}

/** Processors fail with JSON `{ status, message, outcome }` as the error message (it crosses Redis). */
export function parseFailure(reason: string | undefined): NonNullable<JobStatus['error']> {
  try {
    const parsed = JSON.parse(reason ?? '')
    if (parsed && typeof parsed.status === 'number') return parsed
  } catch {}
  if (reason) log.warn('job failed', { reason })
  return { status: 500, message: reason ?? 'job failed' }
}
