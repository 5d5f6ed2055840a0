// Operator endpoints for organizations and their API keys (issue 7), behind the admin scope.
import { Elysia } from 'elysia'
import type { AppDeps } from '../app'

export function organizationAdminRoutes(_deps: AppDeps) {
  return new Elysia({ name: 'admin-organizations' })
}
