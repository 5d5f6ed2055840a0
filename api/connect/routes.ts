// The hosted connect page, SMART callback and webhooks API (issue 8).
import { Elysia } from 'elysia'
import type { AppDeps } from '../app'

export function connectRoutes(_deps: AppDeps) {
  return new Elysia({ name: 'connect' })
}
