// Enqueues a webhook delivery attempt, now or after a delay: a delayed BullMQ job when the queues are
// on Redis; in the embedded form (jobs in process) a timer.
import { checkPayload, type PayloadOf } from '../jobs/definition'
import type { Jobs } from '../jobs/queues'
import { log } from '../log'
import { WebhookDeliveryJob } from './delivery-job'

export async function scheduleDelivery(jobs: Jobs, data: PayloadOf<typeof WebhookDeliveryJob>, delayMs: number): Promise<void> {
  const queue = jobs.queue?.(WebhookDeliveryJob)
  if (queue) {
    await queue.add(WebhookDeliveryJob.name, checkPayload(WebhookDeliveryJob, data), { jobId: crypto.randomUUID(), delay: Math.max(0, delayMs) })
    return
  }
  if (delayMs <= 0) {
    await jobs.enqueue(WebhookDeliveryJob, data)
    return
  }
  setTimeout(
    () => void jobs.enqueue(WebhookDeliveryJob, data).catch((err) => log.warn('webhook delivery not enqueued', { err: String(err) })),
    delayMs,
  ).unref?.()
}
