// Errors of the operator endpoints (/admin/*), as JSON: `{ error: { type, code, message, param } }`.
import { toAppError } from '../../shared/fhir/outcome'
import { log } from '../../shared/log'

export function adminError(err: unknown, request: Request): Response {
  const e = toAppError(err)
  if (e.status >= 500) log.error('admin request failed', { url: request.url, err: String((err as Error)?.stack ?? err) })
  const body = { error: { type: e.category, code: e.category, message: e.message, param: (e.details.param as string | undefined) ?? null } }
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (e.status === 401) headers['www-authenticate'] = 'Bearer'
  return new Response(JSON.stringify(body), { status: e.status, headers })
}
