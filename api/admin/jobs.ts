// Operator endpoints behind the admin scope: admin jobs (status with progress, list, cancel).
import { Elysia } from 'elysia'
import { AppError } from '../../shared/errors'
import { adminJob, cancelAdminJob, listAdminJobs } from '../../shared/jobs/admin-job'
import type { AppDeps } from '../deps'
import { authenticate, authorize } from '../http/auth'
import { requestIdOf } from '../http/request-id'
import { adminError } from './errors'

const STATES = new Set(['queued', 'running', 'completed', 'failed', 'cancelled'])

export function jobAdminRoutes(deps: AppDeps) {
  const requireAdmin = adminGuard(deps)
  // Each handler checks the admin scope first; its errors use the envelope of the operator endpoints.
  const admin =
    <C extends { request: Request }>(fn: (c: C) => Promise<unknown>) =>
    async (c: C) => {
      try {
        await requireAdmin(c.request.headers.get('authorization'))
        return Response.json(await fn(c), { headers: { 'x-request-id': requestIdOf(c.request) } })
      } catch (err) {
        return adminError(err, c.request, deps.publicBase())
      }
    }
  return new Elysia({ name: 'admin-jobs' })
    .get(
      '/admin/jobs',
      admin(async ({ query }: { request: Request; query: Record<string, string | undefined> }) => {
        const limit = query.limit === undefined ? 50 : Number(query.limit)
        if (!Number.isInteger(limit) || limit < 1 || limit > 500)
          throw new AppError('invalid', 'limit must be an integer from 1 to 500', { details: { param: 'limit' } })
        if (query.state !== undefined && !STATES.has(query.state))
          throw new AppError('invalid', `Unknown state "${query.state}"`, { details: { param: 'state' } })
        return { data: await listAdminJobs(deps.sql, { state: query.state, kind: query.kind, limit }) }
      }),
    )
    .get(
      '/admin/jobs/:id',
      admin(async ({ params }: { request: Request; params: { id: string } }) => {
        const job = await adminJob(deps.sql, params.id)
        if (!job) throw new AppError('not-found', `Job ${params.id} not found`)
        return job
      }),
    )
    .post(
      '/admin/jobs/:id/cancel',
      admin(({ params }: { request: Request; params: { id: string } }) => cancelAdminJob(deps.sql, params.id)),
    )
}

/** Checks the admin scope; the API key may also come as the password of HTTP Basic authentication. */
export function adminGuard(deps: AppDeps) {
  return async (authorization: string | null) => {
    if (deps.config.authDisabled) return
    authorize(await authenticate(deps.verifier, basicAsBearer(authorization)), 'admin')
  }
}

/** `Basic base64(user:key)` as `Bearer key`; anything else unchanged. */
function basicAsBearer(authorization: string | null): string | null {
  const m = authorization ? /^Basic\s+(\S+)$/i.exec(authorization) : null
  if (!m) return authorization
  const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8')
  return `Bearer ${decoded.slice(decoded.indexOf(':') + 1)}`
}
