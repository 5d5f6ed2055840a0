// Composition root of a worker process: one BullMQ Worker per registered job definition. Without Redis
// (embedded form) the same registrations run in process, through inProcessRunner().
import { Worker } from 'bullmq'
import type { Config } from '../shared/config'
import { prepareFhirDefinitions } from '../shared/fhir/prepare'
import { loadServerSecret } from '../shared/auth/server-secret'
import { createRepo } from '../shared/fhir/store'
import { AdminJob } from '../shared/jobs/admin-job'
import { dropBlobs, restoreBlobs, stashResult } from '../shared/jobs/blobs'
import { type InProcessRunner, inProcessJobs, redisJobs } from '../shared/jobs/queues'
import { log } from '../shared/log'
import { configOrExit, onShutdown, openRuntime, type Runtime } from '../shared/runtime'
import type { Registration } from './registration'
import { registrations } from './registry'

export interface WorkerNode {
  queues: string[]
  /** Runs jobs in this process (embedded form, no Redis). */
  runner: InProcessRunner
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
  const jobs = pub && sub && blobs ? redisJobs(pub, sub, config.queuePrefix, blobs) : inProcessJobs((def, data, progress) => runner(def, data, progress))
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
  if (!connection || !blobs) {
    const timers = regs
      .filter((r) => r.every)
      .map((r) => setInterval(() => void jobs.enqueue(r.definition, r.every?.data as never).catch(() => {}), r.every?.ms))
    log.info('no REDIS_URL: jobs run in process')
    // On the embedded database this process is the only one: an admin job left queued or running was cut
    // by a stop or a crash (its queue was this process's memory), so it resumes from its last checkpoint.
    if (rt.owner)
      for (const { id } of await rt.sql<{ id: string }[]>`select id from admin_job where state in ('queued', 'running') order by created_at`) {
        log.info('resuming admin job', { id })
        void jobs.enqueue(AdminJob, { jobId: id }).catch((err) => log.error('admin job not resumed', { id, err: String(err) }))
      }
    return {
      queues: [],
      runner,
      async stop() {
        for (const t of timers) clearInterval(t)
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
          })
          return stashResult(blobs, r.definition, job.id as string, result)
        },
        {
          connection,
          prefix: config.queuePrefix,
          concurrency: r.concurrency,
          ...(r.takeover ? { lockDuration: r.takeover.lockMs, stalledInterval: r.takeover.stalledMs } : {}),
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
    runner,
    async stop() {
      // close() waits for jobs in progress; an unfinished job is handed back to the queue.
      await Promise.all(workers.map((w) => w.close()))
      await jobs.close()
      await close()
    },
  }
}

function inProcessRunner(regs: Registration[]): InProcessRunner {
  return async (def, data, progress) => {
    const r = regs.find((x) => x.definition.name === def.name)
    if (!r) throw new Error(`no processor for job ${def.name}`)
    return r.process(data, { id: crypto.randomUUID(), progress, attempt: 1, maxAttempts: 1, stalls: 0 })
  }
}

if (import.meta.main) {
  const config = configOrExit()
  const node = await startWorkers(config)
  onShutdown(() => node.stop())
}
