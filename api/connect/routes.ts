// The connect flow's HTTP surface (issue 8): the hosted pages a patient opens, the SMART callback,
// webhook management, and a patient's connection (sync state, disconnect).
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { connectionRoutes } from './connections'
import { connectPages } from './pages'
import { webhookRoutes } from './webhooks'

export function connectRoutes(deps: AppDeps) {
  return new Elysia({ name: 'connect' }).use(connectPages(deps)).use(webhookRoutes(deps)).use(connectionRoutes(deps))
}
