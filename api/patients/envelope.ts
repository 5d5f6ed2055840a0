// The patient API's error envelope, rendered once for every non-2xx answer:
// `{error: {type, code, message, param, doc_url, request_id}}`. Types, codes and statuses follow
// ../shared/notes/patient-api.md §2; an AppError's details may name the `code` and `param`.
import { AppError, type ErrorCategory } from '../../shared/errors'
import { log } from '../../shared/log'

export const ERROR_DOC_URL = 'https://docs.patient-connection.local/errors'

export interface ErrorEnvelope {
  error: { type: string; code: string; message: string; param: string | null; doc_url: string; request_id: string }
}

const DEFAULTS: Record<ErrorCategory, { type: string; code: string; status?: number }> = {
  invalid: { type: 'invalid_request_error', code: 'bad_request' },
  unauthorized: { type: 'authentication_error', code: 'invalid_api_key' },
  forbidden: { type: 'permission_error', code: 'forbidden' },
  'not-found': { type: 'not_found_error', code: 'resource_not_found' },
  'not-allowed': { type: 'invalid_request_error', code: 'bad_request' },
  'not-acceptable': { type: 'invalid_request_error', code: 'bad_request' },
  conflict: { type: 'conflict_error', code: 'resource_conflict' },
  gone: { type: 'not_found_error', code: 'resource_not_found', status: 404 },
  'precondition-failed': { type: 'invalid_request_error', code: 'bad_request' },
  'too-large': { type: 'invalid_request_error', code: 'payload_too_large' },
  unsupported: { type: 'invalid_request_error', code: 'bad_request' },
  unprocessable: { type: 'invalid_request_error', code: 'invalid_data', status: 400 },
  busy: { type: 'rate_limit_error', code: 'throttled', status: 429 },
  fault: { type: 'api_error', code: 'internal_error' },
}

/** Codes whose type differs from their category's default type. */
const TYPE_OF_CODE: Record<string, string> = {
  idempotency_key_reused: 'idempotency_error',
  idempotency_key_in_use: 'idempotency_error',
  external_id_already_exists: 'conflict_error',
  missing_api_key: 'authentication_error',
}

/** The status and envelope of an error (any thrown value; unknown ones are 500 internal_error). */
export function errorReply(err: unknown, requestId: string): { status: number; envelope: ErrorEnvelope } {
  const e = err instanceof AppError ? err : undefined
  if (!e) log.error('patient API request failed', { requestId, err: String((err as Error)?.stack ?? err) })
  const category: ErrorCategory = e?.category ?? 'fault'
  const d = DEFAULTS[category]
  const code = (e?.details.code as string | undefined) ?? d.code
  const status = (e?.details.status as number | undefined) ?? d.status ?? e?.status ?? 500
  const message = e ? e.message : 'An unexpected error occurred; retry with backoff'
  const param = (e?.details.param as string | undefined) ?? null
  return {
    status,
    envelope: { error: { type: TYPE_OF_CODE[code] ?? d.type, code, message, param, doc_url: `${ERROR_DOC_URL}#${code}`, request_id: requestId } },
  }
}
