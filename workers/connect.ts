// Registrations of the connect-flow jobs: pulling a connection's records from its source, the periodic
// re-sync of active connections, and webhook delivery attempts (issue 8).
import { ConnectResyncJob, ConnectSyncJob } from '../shared/connect/jobs'
import { connectionsDue, syncConnection } from '../shared/connect/sync'
import { checkPayload } from '../shared/jobs/definition'
import { deliverEvent } from '../shared/webhooks/delivery'
import { WebhookDeliveryJob } from '../shared/webhooks/delivery-job'
import type { Registration, WorkerDeps } from './registration'

export function connectRegistrations(deps: WorkerDeps): Registration[] {
  const syncDeps = {
    sql: deps.sql,
    repo: deps.repo,
    config: deps.config,
    secret: deps.secret,
    jobs: deps.jobs,
    cipher: deps.cipher,
    outbound: deps.outbound,
  }
  const resyncEvery = deps.config.connectResyncIntervalMs
  const regs: Registration[] = [
    { definition: ConnectSyncJob, concurrency: 2, process: (data) => syncConnection(syncDeps, checkPayload(ConnectSyncJob, data).connectionId) },
    {
      definition: WebhookDeliveryJob,
      concurrency: 8,
      process: (data) =>
        deliverEvent(
          {
            sql: deps.sql,
            jobs: deps.jobs,
            cipher: deps.cipher,
            outbound: deps.outbound,
            retryDelaysMs: deps.config.webhookRetryDelaysMs,
          },
          checkPayload(WebhookDeliveryJob, data),
        ),
    },
  ]
  if (resyncEvery > 0) {
    regs.push({
      definition: ConnectResyncJob,
      concurrency: 1,
      every: { ms: Math.min(resyncEvery, 15 * 60_000), data: {} },
      async process() {
        const due = await connectionsDue(deps.sql, resyncEvery)
        for (const connectionId of due) await deps.jobs.enqueue(ConnectSyncJob, { connectionId })
        return { enqueued: due.length }
      },
    })
  }
  return regs
}
