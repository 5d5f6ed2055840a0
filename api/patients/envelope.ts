// The patient API's error envelope, rendered once for every non-2xx answer:
// `{error: {type, code, message, param, doc_url, request_id}}`. Types, codes and statuses follow
// ../shared/notes/patient-api.md §2 and live in one table (shared/patients/error-codes.ts); an
// AppError's details may name the `code` and `param`.
import { AppError, databaseError, type ErrorCategory } from '../../shared/errors'
import { log } from '../../shared/log'
import { ERROR_CODES, type ErrorCode, isErrorCode } from '../../shared/patients/error-codes'

/** The path, under the public base URL, of the page that documents every code (error-docs.ts). */
export const ERROR_DOCS_PATH = '/docs/errors'

export interface ErrorEnvelope {
  error: { type: string; code: string; message: string; param: string | null; doc_url: string; request_id: string }
}

const DEFAULTS: Record<ErrorCategory, { code: ErrorCode; status?: number }> = {
  invalid: { code: 'bad_request' },
  unauthorized: { code: 'invalid_api_key' },
  forbidden: { code: 'forbidden' },
  'not-found': { code: 'resource_not_found' },
  'not-allowed': { code: 'bad_request' },
  'not-acceptable': { code: 'bad_request' },
  conflict: { code: 'resource_conflict' },
  gone: { code: 'resource_not_found', status: 404 },
  'precondition-failed': { code: 'bad_request' },
  'too-large': { code: 'payload_too_large' },
  unsupported: { code: 'bad_request' },
  unprocessable: { code: 'invalid_data', status: 400 },
  busy: { code: 'throttled', status: 429 },
  fault: { code: 'internal_error' },
}

/**
 * The status and envelope of an error (any thrown value; unknown ones are 500 internal_error). Only
 * codes of ERROR_CODES are answered: an error naming another code gets its category's code.
 * `publicBase` is the base URL clients see; `doc_url` points at the code's anchor on the error page.
 */
export function errorReply(err: unknown, requestId: string, publicBase: string): { status: number; envelope: ErrorEnvelope } {
  const e = err instanceof AppError ? err : databaseError(err)
  if (!e) log.error('patient API request failed', { requestId, err: String((err as Error)?.stack ?? err) })
  const category: ErrorCategory = e?.category ?? 'fault'
  const d = DEFAULTS[category]
  const code: ErrorCode = isErrorCode(e?.details.code) ? e.details.code : d.code
  const status = (e?.details.status as number | undefined) ?? d.status ?? e?.status ?? 500
  const message = e ? e.message : 'An unexpected error occurred; retry with backoff'
  const param = (e?.details.param as string | undefined) ?? null
  return {
    status,
    envelope: {
      error: { type: ERROR_CODES[code].type, code, message, param, doc_url: `${publicBase}${ERROR_DOCS_PATH}#${code}`, request_id: requestId },
    },
  }
}
