// The webhook delivery job: one attempt at sending one event to its endpoint. A failed attempt
// schedules the next one (delayed job) until the retry schedule is used up.
import { Type } from '@sinclair/typebox'
import { defineJob } from '../jobs/definition'

export const WebhookDeliveryJob = defineJob(
  'webhook-delivery',
  Type.Object({
    eventId: Type.String({ minLength: 1 }),
    /** 1-based attempt number; the retry schedule's length is the last one. */
    attempt: Type.Integer({ minimum: 1 }),
    /** A redelivery asked through the API: one attempt, outside the schedule. */
    manual: Type.Optional(Type.Boolean()),
  }),
  { removeOnComplete: 1000, removeOnFail: 1000 },
)
