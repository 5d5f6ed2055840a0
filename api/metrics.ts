// GET /metrics: Prometheus metrics of this node (request rates and latencies by surface) and of the
// cluster's queues (depths by state, recent job durations) and admin jobs. Behind the admin scope:
// configure the scraper with the admin API key as its bearer token.
import { Elysia } from 'elysia'
import { Queue } from 'bullmq'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { queueNames } from '../shared/jobs/queue-names'
import { adminError } from './admin/errors'
import type { AppDeps } from './deps'
import { authenticate, authorize } from './http/auth'
import { pathOf } from './http/url-path'

const SURFACES = ['fhir', 'admin', 'patients', 'patient-flows', 'sessions', 'connections', 'connect', 'webhooks', 'metrics']

/** The first path segment when it names a known surface, else "other" (bounded label values). */
function surfaceOf(path: string): string {
  const end = path.indexOf('/', 1)
  const first = end < 0 ? path.slice(1) : path.slice(1, end)
  return SURFACES.includes(first) ? first : 'other'
}

export function metricsRoutes(deps: AppDeps) {
  const registry = new Registry()
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by surface, method and status',
    labelNames: ['surface', 'method', 'status'],
    registers: [registry],
  })
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by surface and method',
    labelNames: ['surface', 'method'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  })
  const queues = new Map<string, Queue>()
  const queueOf = (name: string) => {
    let q = queues.get(name)
    if (!q && deps.redis) queues.set(name, (q = new Queue(name, { connection: deps.redis, prefix: deps.config.queuePrefix })))
    return q as Queue
  }
  new Gauge({
    name: 'bullmq_queue_jobs',
    help: 'Jobs per queue and state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      this.reset()
      if (!deps.redis) return
      for (const name of await queueNames(deps.redis, deps.config.queuePrefix)) {
        const counts = await queueOf(name).getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed')
        for (const [state, n] of Object.entries(counts)) this.set({ queue: name, state }, n)
      }
    },
  })
  new Gauge({
    name: 'bullmq_job_duration_seconds',
    help: 'Processing time of the last 100 completed jobs per queue, as quantiles',
    labelNames: ['queue', 'quantile'],
    registers: [registry],
    async collect() {
      this.reset()
      if (!deps.redis) return
      for (const name of await queueNames(deps.redis, deps.config.queuePrefix)) {
        const jobs = await queueOf(name).getJobs(['completed'], 0, 99)
        const d = jobs
          .filter((j) => j.finishedOn && j.processedOn)
          .map((j) => ((j.finishedOn as number) - (j.processedOn as number)) / 1000)
          .sort((a, b) => a - b)
        if (d.length === 0) continue
        for (const q of [0.5, 0.9, 0.99]) this.set({ queue: name, quantile: String(q) }, d[Math.min(d.length - 1, Math.floor(q * d.length))] as number)
      }
    },
  })
  new Gauge({
    name: 'admin_jobs',
    help: 'Admin jobs (reindex, expunge, terminology) by kind and state',
    labelNames: ['kind', 'state'],
    registers: [registry],
    async collect() {
      this.reset()
      for (const r of await deps.sql`select kind, state, count(*)::int as n from admin_job group by kind, state`)
        this.set({ kind: r.kind, state: r.state }, r.n)
    },
  })
  const started = new WeakMap<Request, number>()
  return new Elysia({ name: 'metrics' })
    .onRequest(({ request }) => {
      started.set(request, performance.now())
    })
    .onAfterResponse({ as: 'global' }, ({ request, set, responseValue }) => {
      const t0 = started.get(request)
      if (t0 === undefined) return
      const surface = surfaceOf(pathOf(request.url))
      const status = responseValue instanceof Response ? responseValue.status : (set.status ?? 200)
      requests.inc({ surface, method: request.method, status: String(status) })
      latency.observe({ surface, method: request.method }, (performance.now() - t0) / 1000)
    })
    .get('/metrics', async ({ request }) => {
      try {
        if (!deps.config.authDisabled) authorize(await authenticate(deps.verifier, request.headers.get('authorization')), 'admin')
      } catch (err) {
        return adminError(err, request, deps.publicBase())
      }
      return new Response(await registry.metrics(), { headers: { 'content-type': registry.contentType } })
    })
}
