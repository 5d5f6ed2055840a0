// One error type for the whole program: a category plus a message. Each HTTP surface renders it
// once (OperationOutcome for /fhir, the error envelope for the patient API).

export type ErrorCategory =
  | 'invalid' // 400
  | 'unauthorized' // 401
  | 'forbidden' // 403
  | 'not-found' // 404
  | 'not-allowed' // 405
  | 'not-acceptable' // 406
  | 'conflict' // 409
  | 'gone' // 410
  | 'precondition-failed' // 412
  | 'too-large' // 413
  | 'unsupported' // 415
  | 'unprocessable' // 422
  | 'busy' // 429 / 503
  | 'fault' // 500

export const statusOf: Record<ErrorCategory, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  'not-found': 404,
  'not-allowed': 405,
  'not-acceptable': 406,
  conflict: 409,
  gone: 410,
  'precondition-failed': 412,
  'too-large': 413,
  unsupported: 415,
  unprocessable: 422,
  busy: 503,
  fault: 500,
}

/** One problem found in the input; `expression` is the FHIRPath-like element path when known. */
export interface Issue {
  severity: 'fatal' | 'error' | 'warning' | 'information'
  /** FHIR issue-type code: invalid, structure, required, value, processing, not-found, conflict... */
  code: string
  diagnostics: string
  expression?: string[]
}

export class AppError extends Error {
  readonly category: ErrorCategory
  readonly issues: Issue[]
  /** Extra data a surface may render (e.g. the deleted version for 410). */
  readonly details: Record<string, unknown>

  constructor(category: ErrorCategory, message: string, opts: { issues?: Issue[]; details?: Record<string, unknown> } = {}) {
    super(message)
    this.name = 'AppError'
    this.category = category
    this.issues = opts.issues ?? []
    this.details = opts.details ?? {}
  }

  get status(): number {
    return statusOf[this.category]
  }
}

export const invalid = (message: string, expression?: string) =>
  new AppError('invalid', message, {
    issues: [{ severity: 'error', code: 'invalid', diagnostics: message, expression: expression ? [expression] : undefined }],
  })
