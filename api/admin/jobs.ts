// Operator endpoints for admin jobs and the queue dashboard (issue 6), behind the admin scope.
import { Elysia } from 'elysia'
import type { AppDeps } from '../app'

export function jobAdminRoutes(_deps: AppDeps) {
  return new Elysia({ name: 'admin-jobs' })
}
