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

/** 429 with Retry-After (seconds) and any other headers of the refusal (each surface renders them). */
export const throttled = (message: string, retryAfterS: number, headers: Record<string, string> = {}) =>
  new AppError('busy', message, {
    details: { code: 'throttled', status: 429, retryAfter: retryAfterS, headers: { ...headers, 'retry-after': String(retryAfterS) } },
  })

export const invalid = (message: string, expression?: string) =>
  new AppError('invalid', message, {
    issues: [{ severity: 'error', code: 'invalid', diagnostics: message, expression: expression ? [expression] : undefined }],
  })

/**
 * The SQLSTATEs that are the input's fault or the server's budget, mapped once for every surface: a data
 * exception (class 22: a NUL character, a number out of range, a value that does not convert), a value
 * beyond PostgreSQL's own limits (54000: e.g. a tsvector over 1 MB), serialization conflicts, and a
 * statement cancelled by statement_timeout or because its client left (57014). Undefined for others.
 * https://www.postgresql.org/docs/current/errcodes-appendix.html
 */
export function databaseError(err: unknown): AppError | undefined {
  const code = (err as { code?: unknown })?.code
  if (typeof code !== 'string' || code.length !== 5) return undefined
  if (code === '22P05' || code === '22021')
    return new AppError('invalid', 'The request contains a character that cannot be stored (U+0000 NUL, or text that is not valid in UTF-8)')
  if (code.startsWith('22')) return new AppError('invalid', `The request contains a value the database refused: ${(err as Error).message}`)
  if (code === '54000') return new AppError('invalid', `The request exceeds a storage limit: ${(err as Error).message}`)
  if (code === '40001' || code === '40P01')
    return new AppError(
      'conflict',
      'HAPI-0550: The operation has failed with a version constraint failure. This generally means that two clients/threads were trying to update the same resource at the same time, and this request was chosen as the failing request.',
    )
  if (code === '57014')
    return new AppError('busy', 'The request took longer than its statement budget (statement_timeout) and was cancelled; narrow it and try again', {
      details: { timeout: true },
    })
  return undefined
}
