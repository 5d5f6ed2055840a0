// OperationOutcome rendering: of an AppError (one mapping for the whole FHIR surface), and of a
// successful storage outcome as HAPI returns it for `Prefer: return=OperationOutcome`.
// https://hl7.org/fhir/R4/operationoutcome.html
import { AppError, databaseError, type Issue } from '../errors'

const STORAGE_CODES = 'https://hapifhir.io/fhir/CodeSystem/hapi-fhir-storage-response-code'

export function errorOutcome(err: AppError): any {
  const issues: Issue[] = err.issues.length > 0 ? err.issues : [{ severity: 'error', code: issueCodeOf(err), diagnostics: err.message }]
  return {
    resourceType: 'OperationOutcome',
    issue: issues.map((i) => ({
      severity: i.severity,
      code: i.code,
      diagnostics: i.diagnostics,
      ...(i.expression ? { expression: i.expression } : {}),
    })),
  }
}

function issueCodeOf(err: AppError): string {
  switch (err.category) {
    // HAPI gives a 404 the issue code `processing`, as any error it raises (ResourceNotFoundException).
    case 'gone':
      return 'not-found'
    case 'conflict':
      return 'conflict'
    case 'unauthorized':
    case 'forbidden':
      return 'security'
    case 'not-allowed':
    case 'unsupported':
    case 'not-acceptable':
      return 'not-supported'
    case 'too-large':
      return 'too-costly'
    case 'busy':
      return 'transient'
    case 'fault':
      return 'exception'
    default:
      return 'processing'
  }
}

/** Any thrown value as an AppError; unknown errors become `fault` with a generic message. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err
  const fromDatabase = databaseError(err)
  if (fromDatabase) return fromDatabase
  // Input nested deeper than the stack (a JSON Patch value 100,000 arrays deep): the input's fault.
  if (err instanceof RangeError && /call stack/i.test(err.message)) return new AppError('invalid', 'The request is nested too deeply to be processed')
  return new AppError('fault', 'Internal server error')
}

export type StorageCode =
  | 'SUCCESSFUL_CREATE'
  | 'SUCCESSFUL_CREATE_NO_CONDITIONAL_MATCH'
  | 'SUCCESSFUL_CREATE_WITH_CONDITIONAL_MATCH'
  | 'SUCCESSFUL_UPDATE_NO_CONDITIONAL_MATCH'
  | 'SUCCESSFUL_UPDATE_WITH_CONDITIONAL_MATCH'
  | 'SUCCESSFUL_UPDATE_WITH_CONDITIONAL_MATCH_NO_CHANGE'
  | 'SUCCESSFUL_CONDITIONAL_PATCH'
  | 'SUCCESSFUL_CONDITIONAL_PATCH_NO_CHANGE'
  | 'SUCCESSFUL_UPDATE'
  | 'SUCCESSFUL_UPDATE_AS_CREATE'
  | 'SUCCESSFUL_UPDATE_NO_CHANGE'
  | 'SUCCESSFUL_DELETE'
  | 'SUCCESSFUL_DELETE_ALREADY_DELETED'
  | 'SUCCESSFUL_DELETE_NOT_FOUND'
  | 'SUCCESSFUL_PATCH'
  | 'SUCCESSFUL_PATCH_NO_CHANGE'

const DISPLAY: Record<StorageCode, string> = {
  SUCCESSFUL_CREATE: 'Create succeeded.',
  SUCCESSFUL_CREATE_NO_CONDITIONAL_MATCH: 'Conditional create succeeded: no existing resource matched the conditional URL.',
  SUCCESSFUL_CREATE_WITH_CONDITIONAL_MATCH: 'Conditional create succeeded: an existing resource matched the conditional URL so no action was taken.',
  SUCCESSFUL_UPDATE_NO_CONDITIONAL_MATCH: 'Conditional update succeeded: no existing resource matched the conditional URL so a new resource was created.',
  SUCCESSFUL_UPDATE_WITH_CONDITIONAL_MATCH: 'Conditional update succeeded: an existing resource matched the conditional URL and was updated.',
  SUCCESSFUL_UPDATE_WITH_CONDITIONAL_MATCH_NO_CHANGE:
    'Conditional update succeeded: an existing resource matched the conditional URL and was updated, but no changes were detected so no action was taken.',
  SUCCESSFUL_CONDITIONAL_PATCH: 'Conditional patch succeeded.',
  SUCCESSFUL_CONDITIONAL_PATCH_NO_CHANGE: 'Conditional patch succeeded: No changes were detected so no action was taken.',
  SUCCESSFUL_UPDATE: 'Update succeeded.',
  SUCCESSFUL_UPDATE_AS_CREATE: 'Update as create succeeded.',
  SUCCESSFUL_UPDATE_NO_CHANGE: 'Update succeeded: No changes were detected so no action was taken.',
  SUCCESSFUL_DELETE: 'Delete succeeded.',
  SUCCESSFUL_DELETE_ALREADY_DELETED: 'Delete succeeded: Resource was already deleted so no action was taken.',
  SUCCESSFUL_DELETE_NOT_FOUND: 'Delete succeeded: No existing resource was found so no action was taken.',
  SUCCESSFUL_PATCH: 'Patch succeeded.',
  SUCCESSFUL_PATCH_NO_CHANGE: 'Patch succeeded: No changes were detected so no action was taken.',
}

/** `issue`: the issue's severity and code when not `information`/`informational` (a conditional delete that found nothing). */
export function storageOutcome(code: StorageCode, diagnostics: string, issue = { severity: 'information', code: 'informational' }): any {
  return {
    resourceType: 'OperationOutcome',
    issue: [
      {
        severity: issue.severity,
        code: issue.code,
        details: { coding: [{ system: STORAGE_CODES, code, display: DISPLAY[code] }] },
        diagnostics,
      },
    ],
  }
}
