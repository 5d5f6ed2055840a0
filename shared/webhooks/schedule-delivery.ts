// Enqueues a webhook delivery attempt, now or after a delay: a delayed job, in Redis in the cluster form
// and in the embedded database in the embedded form (a retry survives a restart either way).
import type { PayloadOf } from '../jobs/definition'
import type { Jobs } from '../jobs/queues'
import { WebhookDeliveryJob } from './delivery-job'

export async function scheduleDelivery(jobs: Jobs, data: PayloadOf<typeof WebhookDeliveryJob>, delayMs: number): Promise<void> {
  await jobs.enqueue(WebhookDeliveryJob, data, { delayMs: Math.max(0, delayMs) })
}
