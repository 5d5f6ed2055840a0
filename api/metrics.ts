// GET /metrics: Prometheus metrics (issue 6).
import { Elysia } from 'elysia'
import type { AppDeps } from './app'

export function metricsRoutes(_deps: AppDeps) {
  return new Elysia({ name: 'metrics' })
}
