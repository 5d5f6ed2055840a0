// Composition root of a worker process: one BullMQ Worker per registered job definition.
import { Worker } from 'bullmq'
import type { Config } from '../shared/config'
import { log } from '../shared/log'
import { configOrExit, onShutdown, openRuntime, type Runtime } from '../shared/runtime'
import { registrations } from './registry'

export interface WorkerNode {
  queues: string[]
  stop(): Promise<void>
}

/** Starts the workers; with `shared`, on a runtime the caller owns (all-in-one start). */
export async function startWorkers(config: Config, shared?: Runtime): Promise<WorkerNode> {
  const rt = shared ?? (await openRuntime(config))
  const close = () => (shared ? Promise.resolve() : rt.close())
  const redis = rt.redis('worker')
  if (!redis) {
    // Embedded form: job processors run in process with the API (shared/jobs decides where to enqueue).
    log.info('no REDIS_URL: jobs run in process')
    return { queues: [], stop: close }
  }
  const workers = registrations(rt).map(
    (r) =>
      new Worker(r.definition.name, (job) => r.process(job.data, (p) => job.updateProgress(p)), {
        connection: redis,
        prefix: config.queuePrefix,
        concurrency: r.concurrency,
      }),
  )
  for (const w of workers) w.on('failed', (job, err) => log.warn('job failed', { queue: w.name, id: job?.id, err: err.message }))
  const queues = workers.map((w) => w.name)
  log.info('workers started', { queues })
  return {
    queues,
    async stop() {
      // close() waits for jobs in progress; an unfinished job is handed back to the queue.
      await Promise.all(workers.map((w) => w.close()))
      await close()
    },
  }
}

if (import.meta.main) {
  const config = configOrExit()
  const node = await startWorkers(config)
  onShutdown(() => node.stop())
}
