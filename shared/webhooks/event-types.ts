// The webhook event types. ../shared/notes/patient-api.md §6.2 (Event types).
export const EVENT_TYPES = ['patient_flow.completed', 'connection.token_refresh_failed', 'records.sync.completed', 'records.sync.failed'] as const
export type EventType = (typeof EVENT_TYPES)[number]

export const isEventType = (v: string): v is EventType => (EVENT_TYPES as readonly string[]).includes(v)
