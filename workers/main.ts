// Composition root of a worker process: one BullMQ Worker per registered job definition. Without Redis
// (embedded form) the same registrations run in process, through inProcessRunner().
import { Worker } from 'bullmq'
import type { Config, JobTakeover } from '../shared/config'
import { prepareFhirDefinitions } from '../shared/fhir/prepare'
import { loadServerSecret } from '../shared/auth/server-secret'
import { createRepo } from '../shared/fhir/store'
import { AdminJob } from '../shared/jobs/admin-job'
import { dropBlobs, restoreBlobs, stashResult } from '../shared/jobs/blobs'
import { type InProcessJobs, type InProcessRunner, inProcessJobs } from '../shared/jobs/in-process'
import { LocalJobStore } from '../shared/jobs/local-job-store'
import { type Jobs, redisJobs } from '../shared/jobs/queues'
import { log } from '../shared/log'
import { configOrExit, onShutdown, openRuntime, type Runtime } from '../shared/runtime'
import type { Registration } from './registration'
import { registrations } from './registry'

export interface WorkerNode {
  queues: string[]
  /** The jobs run in this process (no Redis), for the API node of the same process to enqueue to. */
  inProcess?: InProcessJobs
  stop(): Promise<void>
}

/** Starts the workers; with `shared`, on a runtime the caller owns (all-in-one start). */
export async function startWorkers(config: Config, shared?: Runtime): Promise<WorkerNode> {
  prepareFhirDefinitions()
  const rt = shared ?? (await openRuntime(config, 'jobs'))
  const close = () => (shared ? Promise.resolve() : rt.close())
  const pub = rt.redis('producer')
  const sub = rt.redis('subscriber')
  const repo = await createRepo(rt.sql, config, pub && sub ? { pub, sub } : undefined)
  const connection = rt.redis('worker')
  const blobs = rt.blobs()
  // Processors enqueue through the same Jobs the API uses; in process, through the runner below.
  let runner: InProcessRunner = async () => {
    throw new Error('job runner not ready')
  }
  const concurrency = new Map<string, number>()
  // In process on the embedded database (one owner process), jobs are kept in it until they finish.
  const inProcess =
    pub && sub && blobs
      ? undefined
      : inProcessJobs(
          (def, data, job) => runner(def, data, job),
          rt.owner ? new LocalJobStore(rt.sql) : undefined,
          (queue) => concurrency.get(queue) ?? 1,
        )
  const jobs: Jobs =
    inProcess ?? redisJobs(pub as NonNullable<typeof pub>, sub as NonNullable<typeof sub>, config.queuePrefix, blobs as NonNullable<typeof blobs>)
  const regs = registrations({
    repo,
    sql: rt.sql,
    config,
    secret: await loadServerSecret(rt.sql),
    jobs,
    redis: pub,
    cipher: rt.cipher,
    outbound: rt.outbound,
  })
  runner = inProcessRunner(regs)
  for (const r of regs) concurrency.set(r.definition.name, r.concurrency)
  if (inProcess || !connection || !blobs) {
    for (const r of regs) if (r.every) await jobs.schedule(r.definition, r.every.ms, r.every.data as never)
    log.info('no REDIS_URL: jobs run in process')
    // On the embedded database this process is the only one: the jobs recorded there and not finished
    // were cut by a stop or a crash, and run again. An admin job whose local_job row is missing (recorded
    // before local_job existed) is enqueued from its admin_job row: it resumes from its last checkpoint.
    if (inProcess && rt.owner) {
      const resumed = await inProcess.resume(regs.map((r) => r.definition))
      if (resumed) log.info('jobs resumed', { count: resumed })
      for (const { id } of await rt.sql<{ id: string }[]>`select id from admin_job where state in ('queued', 'running') order by created_at`)
        await jobs.enqueue(AdminJob, { jobId: id }, { jobId: id })
    }
    return {
      queues: [],
      inProcess,
      async stop() {
        await jobs.close()
        await close()
      },
    }
  }
  const workers = regs.map(
    (r) =>
      new Worker(
        r.definition.name,
        async (job) => {
          const result = await r.process(await restoreBlobs(blobs, r.definition, job.id as string, job.data), {
            id: job.id as string,
            progress: (p) => void job.updateProgress(p),
            attempt: job.attemptsMade + 1,
            maxAttempts: job.opts.attempts ?? 1,
            stalls: job.stalledCounter ?? 0,
            restarts: job.stalledCounter ?? 0,
          })
          return stashResult(blobs, r.definition, job.id as string, result)
        },
        {
          connection,
          prefix: config.queuePrefix,
          concurrency: r.concurrency,
          ...takeoverOptions(config.jobTakeover, r.takeover),
          ...(r.maxStalls !== undefined ? { maxStalledCount: r.maxStalls } : {}),
        },
      ),
  )
  for (const r of regs) if (r.every) await jobs.schedule(r.definition, r.every.ms, r.every.data as never)
  for (const [i, w] of workers.entries()) {
    const def = regs[i].definition
    // Stashed payload fields go once the job is done for good: not from the processor, since a worker
    // that dies after the commit but before the job is marked completed retries with the payload.
    const drop = (job: { id?: string; data: unknown }) => void dropBlobs(blobs, def, job.id as string, job.data).catch(() => {})
    w.on('completed', drop)
    w.on('failed', (job, err) => {
      log.warn('job failed', { queue: w.name, id: job?.id, err: err.message.slice(0, 500) })
      if (job && (err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1))) drop(job)
    })
  }
  const queues = workers.map((w) => w.name)
  log.info('workers started', { queues })
  return {
    queues,
    async stop() {
      // close() waits for jobs in progress; an unfinished job is handed back to the queue.
      await Promise.all(workers.map((w) => w.close()))
      await jobs.close()
      await close()
    },
  }
}

/** A live worker renews a short lock every second (BullMQ: at half the lock), so that it loses its job only when
 *  its event loop stalls for nearly the whole lock: a 4 s lock renewed at 2 s was lost by live workers on a
 *  machine at load 15. */
const LOCK_RENEW_MS = 1000

/** BullMQ's lock and stalled-check options of one queue: the settings over the registration's own; a value
 *  neither gives is left out (BullMQ takes an undefined one as given). */
function takeoverOptions(settings: JobTakeover, own: JobTakeover = {}): { lockDuration?: number; lockRenewTime?: number; stalledInterval?: number } {
  const lockMs = settings.lockMs ?? own.lockMs
  const stalledMs = settings.stalledCheckMs ?? own.stalledCheckMs
  return {
    ...(lockMs !== undefined ? { lockDuration: lockMs, lockRenewTime: Math.min(lockMs / 2, LOCK_RENEW_MS) } : {}),
    ...(stalledMs !== undefined ? { stalledInterval: stalledMs } : {}),
  }
}

function inProcessRunner(regs: Registration[]): InProcessRunner {
  return async (def, data, job) => {
    const r = regs.find((x) => x.definition.name === def.name)
    if (!r) throw new Error(`no processor for job ${def.name}`)
    return r.process(data, { ...job, attempt: 1, maxAttempts: 1 })
  }
}

if (import.meta.main) {
  const config = configOrExit()
  const node = await startWorkers(config)
  onShutdown(() => node.stop())
}
