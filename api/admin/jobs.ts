// Operator endpoints behind the admin scope: admin jobs (status with progress, list, cancel).
import { Elysia } from 'elysia'
import { AppError } from '../../shared/errors'
import { adminJob, cancelAdminJob, listAdminJobs } from '../../shared/jobs/admin-job'
import type { AppDeps } from '../app'
import { authenticate, authorize } from '../http/auth'
import { adminError } from './errors'

const STATES = new Set(['queued', 'running', 'completed', 'failed', 'cancelled'])

export function jobAdminRoutes(deps: AppDeps) {
  const requireAdmin = adminGuard(deps)
  const app = new Elysia({ name: 'admin-jobs' })
    .get('/admin/jobs', async ({ request, query }) => {
      await requireAdmin(request.headers.get('authorization'))
      const limit = query.limit === undefined ? 50 : Number(query.limit)
      if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new AppError('invalid', 'limit must be an integer from 1 to 500', { details: { param: 'limit' } })
      if (query.state !== undefined && !STATES.has(query.state)) throw new AppError('invalid', `Unknown state "${query.state}"`, { details: { param: 'state' } })
      return { data: await listAdminJobs(deps.sql, { state: query.state, kind: query.kind, limit }) }
    })
    .get('/admin/jobs/:id', async ({ request, params }) => {
      await requireAdmin(request.headers.get('authorization'))
      const job = await adminJob(deps.sql, params.id)
      if (!job) throw new AppError('not-found', `Job ${params.id} not found`)
      return job
    })
    .post('/admin/jobs/:id/cancel', async ({ request, params }) => {
      await requireAdmin(request.headers.get('authorization'))
      return cancelAdminJob(deps.sql, params.id)
    })
    .onError({ as: 'scoped' }, ({ error, request, set }) => {
      const res = adminError(error, request)
      set.status = res.status
      return res
    })
  return app
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
