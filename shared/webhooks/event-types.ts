// The webhook event types. ../shared/notes/patient-api.md §6.2 (Event types). A record created by
// POST /sessions completes as `session.completed`, one created by POST /patient-flows as `patient_flow.completed`.
export const EVENT_TYPES = [
  'patient_flow.completed',
  'session.completed',
  'connection.token_refresh_failed',
  'records.sync.completed',
  'records.sync.failed',
] as const
export type EventType = (typeof EVENT_TYPES)[number]

export const isEventType = (v: string): v is EventType => (EVENT_TYPES as readonly string[]).includes(v)
