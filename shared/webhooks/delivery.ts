// One delivery attempt of a webhook event: POST the event JSON, signed, to its endpoint; a 2xx within
// five seconds is success. Each attempt is recorded; a failure schedules the next attempt after the
// schedule's next delay, and after the last one the endpoint is disabled (no event is emitted).
// ../shared/notes/patient-api.md §6.2 (Delivery behaviour).
// The POST goes through the outbound client, which checks the endpoint's address again now (DNS may
// have changed since registration) and follows no redirect. A refused target is recorded with its
// reason and nothing is sent, so the events view shows an answer's excerpt only from allowed targets.
import type { Sql } from '../db/client'
import type { PayloadOf } from '../jobs/definition'
import type { Jobs } from '../jobs/queues'
import { log } from '../log'
import type { Outbound } from '../net/client'
import { OutboundRefused } from '../net/target'
import type { SecretCipher } from '../secrets/cipher'
import type { WebhookDeliveryJob } from './delivery-job'
import { scheduleDelivery } from './schedule-delivery'
import { SIGNATURE_HEADER, signatureHeader } from './signature'

export interface DeliveryDeps {
  sql: Sql
  jobs: Jobs
  cipher: SecretCipher
  outbound: Outbound
  retryDelaysMs: number[]
}

export const DELIVERY_TIMEOUT_MS = 5_000
const RESPONSE_LIMIT = 4096

export type DeliveryOutcome = 'delivered' | 'retry-scheduled' | 'endpoint-disabled' | 'failed' | 'skipped'

export async function deliverEvent(deps: DeliveryDeps, job: PayloadOf<typeof WebhookDeliveryJob>): Promise<DeliveryOutcome> {
  const [ev] = await deps.sql<{ payload: string; url: string; secret: string; status: string; delivered_at: Date | null; endpoint_id: string }[]>`
    select e.payload, w.url, w.secret, w.status, e.delivered_at, w.id as endpoint_id
    from webhook_event e join webhook_endpoint w on w.id = e.webhook_endpoint_id where e.id = ${job.eventId}`
  // Gone (endpoint deleted), already delivered, or the endpoint was disabled meanwhile: nothing to do.
  if (!ev || (!job.manual && (ev.delivered_at || ev.status !== 'active'))) return 'skipped'
  const started = Date.now()
  let status: number | null = null
  let response: string | null = null
  let error: string | null = null
  try {
    const res = await deps.outbound.fetch(ev.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'fhir-platform-webhooks/1',
        [SIGNATURE_HEADER]: signatureHeader(deps.cipher.open(ev.secret), ev.payload),
      },
      body: ev.payload,
      timeoutMs: DELIVERY_TIMEOUT_MS,
    })
    status = res.status
    response = await res.excerpt(RESPONSE_LIMIT)
  } catch (err) {
    error = err instanceof OutboundRefused ? `not sent: ${err.message}` : String((err as Error).message)
  }
  const ok = status !== null && status >= 200 && status < 300
  const last = job.attempt >= deps.retryDelaysMs.length
  const retry = !ok && !job.manual && !last
  const nextAt = retry ? new Date(Date.now() + deps.retryDelaysMs[job.attempt]) : null
  await deps.sql.begin(async (tx) => {
    await tx`
      insert into webhook_delivery (event_id, attempt, manual, status_code, duration_ms, error, response)
      values (${job.eventId}, ${job.attempt}, ${!!job.manual}, ${status}, ${Date.now() - started}, ${error}, ${response})`
    await tx`
      update webhook_event set attempts = attempts + 1, last_status_code = ${status}, last_response_body = ${response ?? error},
        delivered_at = coalesce(delivered_at, ${ok ? new Date() : null}),
        next_attempt_at = ${ok ? null : job.manual ? tx`next_attempt_at` : nextAt}
      where id = ${job.eventId}`
    if (!ok && !job.manual && last)
      await tx`update webhook_endpoint set status = 'disabled', updated_at = date_trunc('milliseconds', now()) where id = ${ev.endpoint_id}`
  })
  if (ok) return 'delivered'
  if (retry) {
    await scheduleDelivery(deps.jobs, { eventId: job.eventId, attempt: job.attempt + 1 }, deps.retryDelaysMs[job.attempt])
    return 'retry-scheduled'
  }
  if (!job.manual && last) {
    log.warn('webhook endpoint disabled after its last failed attempt', { endpoint: ev.endpoint_id, event: job.eventId })
    return 'endpoint-disabled'
  }
  return 'failed'
}
