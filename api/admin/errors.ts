// Errors of the operator endpoints (/admin/*, /metrics): the same envelope as the patient API's,
// `{ error: { type, code, message, param, doc_url, request_id } }`.
import { requestIdOf } from '../http/request-id'
import { errorResponse } from '../patients/org-api'

export function adminError(err: unknown, request: Request, publicBase: string): Response {
  return errorResponse(err, requestIdOf(request), publicBase)
}
