// Errors of the patient API: an AppError whose details carry the envelope's `code` and `param`, so
// the HTTP edge renders `{error: {type, code, message, param, doc_url, request_id}}` from it.
import { AppError, type ErrorCategory } from '../errors'
import type { ErrorCode } from './error-codes'

export function apiError(category: ErrorCategory, code: ErrorCode, message: string, param?: string): AppError {
  return new AppError(category, message, { details: { code, param } })
}

/** 400 invalid_data: a value that failed validation, naming the parameter. */
export const invalidData = (param: string, message: string) => apiError('invalid', 'invalid_data', message, param)

/** 400 bad_request: a malformed request or a missing or unknown field. */
export const badRequest = (message: string, param?: string) => apiError('invalid', 'bad_request', message, param)

/** 404 resource_not_found: absent, or another organization's (never told apart). */
export const notFound = (what: string, id: string, param?: string) => apiError('not-found', 'resource_not_found', `No such ${what}: '${id}'`, param)
