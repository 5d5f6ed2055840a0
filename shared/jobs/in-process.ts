// Jobs run in this process (no Redis). With a store (the embedded form, where one process owns the
// database) a job is recorded in local_job before enqueue() returns, so a request answered 2xx for work
// queued (a respond-async Bundle, a sync, a background deletion, a webhook delivery) never loses it: the
// jobs not finished when the process stopped or crashed run again at the next start (resume()). A job
// that is run again learns it from JobInfo.restarts, and from stalls once it may be what killed the
// process (cut twice), as a job taken over from a dead worker on Redis does: a transaction finds its
// recorded results (bundle_job), an admin job its cursor. Without a store (DATABASE_URL and no REDIS_URL,
// possibly several processes) the status is kept in memory for an hour and nothing is resumed.
import { log } from '../log'
import { checkPayload, type JobDefinition } from './definition'
import { FINISHED_KEPT_MS, type LocalJobStore } from './local-job-store'
import type { JobProgress, JobStatus } from './progress'
import { failureOf, type Jobs } from './queues'

export interface InProcessJob {
  id: string
  progress: (p: JobProgress) => void
  /** Runs of this job cut before they finished (a stop or a crash of the process). */
  restarts: number
  /** The cuts the job may be blamed for: the first is not (the process is stopped or killed for many
   *  reasons), each later one is. */
  stalls: number
}

export type InProcessRunner = (def: JobDefinition, data: unknown, job: InProcessJob) => Promise<unknown>

export interface InProcessJobs extends Jobs {
  /** Runs again the recorded jobs that had not finished (at start); how many. */
  resume(defs: readonly JobDefinition[]): Promise<number>
}

type Entry = JobStatus & { def: string; at: number }

/**
 * `concurrency`: how many jobs of a queue run at once (the registration's); the others wait their turn,
 * and a job's run begins (is counted in local_job) only when it gets one.
 */
export function inProcessJobs(runner: InProcessRunner, store?: LocalJobStore, concurrency: (queue: string) => number = () => 1): InProcessJobs {
  const memory = new Map<string, Entry>()
  const lanes = new Map<string, { active: number; waiting: (() => void)[] }>()
  const acquire = async (queue: string) => {
    let lane = lanes.get(queue)
    if (!lane) lanes.set(queue, (lane = { active: 0, waiting: [] }))
    if (lane.active < Math.max(1, concurrency(queue))) lane.active++
    else await new Promise<void>((resolve) => lane.waiting.push(resolve)) // the slot is handed over as is
  }
  const release = (queue: string) => {
    const lane = lanes.get(queue)
    if (!lane) return
    const next = lane.waiting.shift()
    if (next) next()
    else lane.active--
  }
  const timers = new Set<ReturnType<typeof setTimeout>>()
  const intervals = new Set<ReturnType<typeof setInterval>>()
  let closed = false

  const run = async (def: JobDefinition, data: unknown, id: string, entry: Entry): Promise<void> => {
    await acquire(def.name)
    try {
      if (!closed) await runOne(def, data, id, entry)
    } finally {
      release(def.name)
    }
  }

  const runOne = async (def: JobDefinition, data: unknown, id: string, entry: Entry): Promise<void> => {
    entry.state = 'running'
    let result: unknown
    try {
      const starts = store ? await store.claim(id) : 1
      if (starts === undefined) return void memory.delete(id) // finished meanwhile
      const progress = (p: JobProgress) => {
        entry.progress = p
      }
      result = await runner(def, data, { id, progress, restarts: starts - 1, stalls: Math.max(0, starts - 2) })
    } catch (err) {
      Object.assign(entry, { state: 'failed', error: failureOf(err) })
      await store?.fail(id, entry.error as NonNullable<JobStatus['error']>)
      if (store) memory.delete(id)
      return
    }
    Object.assign(entry, { state: 'completed', result })
    await store?.complete(def, id, result)
    // Recorded: the row answers from now on (and after a restart).
    if (store) memory.delete(id)
  }

  const start = (def: JobDefinition, data: unknown, id: string, delayMs = 0) => {
    const entry: Entry = { id, state: 'queued', def: def.name, at: Date.now() }
    memory.set(id, entry)
    for (const [k, v] of memory) if (v.state !== 'running' && v.state !== 'queued' && Date.now() - v.at > FINISHED_KEPT_MS) memory.delete(k)
    const go = () => run(def, data, id, entry).catch((err) => log.error('job outcome not recorded', { id, queue: def.name, err: String(err) }))
    if (closed) return
    if (delayMs <= 0) return void go()
    const t = setTimeout(() => {
      timers.delete(t)
      void go()
    }, delayMs)
    timers.add(t)
  }

  return {
    async enqueue(def, data, opts) {
      const payload = checkPayload(def, data)
      const id = opts?.jobId ?? crypto.randomUUID()
      const known = memory.get(id)
      if (known && (known.state === 'running' || known.state === 'queued')) return id
      // Committed before the caller answers: the work survives a crash from here on.
      if (store && !(await store.add(def, id, payload, opts?.delayMs))) return id
      start(def, payload, id, opts?.delayMs)
      return id
    },
    // The caller waits for the result: nothing to keep should the process stop first.
    async run(def, data) {
      try {
        return await runner(def, checkPayload(def, data), { id: crypto.randomUUID(), progress: () => {}, restarts: 0, stalls: 0 })
      } catch (err) {
        const failure = failureOf(err)
        throw Object.assign(new Error(failure.message), { jobFailure: failure })
      }
    },
    async status(def, id) {
      const s = memory.get(id)
      if (s) return s.def === def.name ? s : undefined
      return store?.status(def, id)
    },
    async schedule(def, everyMs, data) {
      // Periodic work is not recorded: the next start schedules it again.
      const payload = checkPayload(def, data)
      intervals.add(
        setInterval(() => void runner(def, payload, { id: crypto.randomUUID(), progress: () => {}, restarts: 0, stalls: 0 }).catch(() => {}), everyMs),
      )
    },
    async resume(defs) {
      if (!store) return 0
      const pending = await store.pending()
      for (const job of pending) {
        const def = defs.find((d) => d.name === job.queue)
        if (!def) {
          await store.fail(job.id, { status: 500, message: `No processor for job queue "${job.queue}"` })
          continue
        }
        log.info('resuming job', { id: job.id, queue: job.queue })
        start(def, job.data, job.id, job.delayMs)
      }
      return pending.length
    },
    async close() {
      // Jobs still running are recorded as running: the next start runs them again.
      closed = true
      for (const t of timers) clearTimeout(t)
      for (const t of intervals) clearInterval(t)
      timers.clear()
      intervals.clear()
    },
  }
}
