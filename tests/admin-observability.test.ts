// What operators watch: GET /metrics (Prometheus text: request rates and latencies, queue depths, job
// durations, admin jobs) and the queue dashboard at /admin/queues, both behind the admin scope.
import { describe, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { ADMIN_KEY, useTestServer } from './harness'

const s = useTestServer()
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`operator:${key}`).toString('base64')}` })

describe('GET /metrics', () => {
  test('needs the admin scope', async () => {
    expect((await fetch(`${s.base}/metrics`)).status).toBe(401)
    const { key } = await createApiKey(s.sql, 'reader', ['read'])
    expect((await fetch(`${s.base}/metrics`, { headers: bearer(key) })).status).toBe(403)
  })

  test('counts requests by surface and status, and shows queue depths and job durations', async () => {
    for (let i = 0; i < 3; i++) await s.fhirFetch('/Patient/nope')
    const bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [{ resource: { resourceType: 'Patient' }, request: { method: 'POST', url: 'Patient' } }],
    }
    expect((await s.fhirFetch('', { method: 'POST', json: bundle })).status).toBe(200)
    const res = await fetch(`${s.base}/metrics`, { headers: bearer(ADMIN_KEY) })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/plain')
    const text = await res.text()
    const notFound = /http_requests_total\{surface="fhir",method="GET",status="404"\} (\d+)/.exec(text)
    expect(Number(notFound?.[1])).toBeGreaterThanOrEqual(3)
    expect(text).toMatch(/http_request_duration_seconds_bucket\{le="0\.01",surface="fhir",method="GET"\} \d+/)
    expect(text).toMatch(/bullmq_queue_jobs\{queue="transaction-bundle",state="completed"\} [1-9]/)
    expect(text).toMatch(/bullmq_job_duration_seconds\{queue="transaction-bundle",quantile="0.5"\} [0-9.e-]+/)
  })

  test('admin jobs by kind and state', async () => {
    const res = await s.fhirFetch('/$reindex', { method: 'POST', json: { resourceType: 'Parameters' } })
    expect(res.status).toBe(200)
    for (let i = 0; i < 100; i++) {
      const text = await (await fetch(`${s.base}/metrics`, { headers: bearer(ADMIN_KEY) })).text()
      if (/admin_jobs\{kind="reindex",state="completed"\} 1/.test(text)) return
      await Bun.sleep(50)
    }
    throw new Error('admin_jobs metric never showed the completed reindex')
  })
})

describe('queue dashboard', () => {
  test('asks a browser for credentials, refuses a key without admin scope', async () => {
    const res = await fetch(`${s.base}/admin/queues`)
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toContain('Basic')
    const { key } = await createApiKey(s.sql, 'writer', ['write'])
    expect((await fetch(`${s.base}/admin/queues`, { headers: basic(key) })).status).toBe(403)
  })

  test('serves the board and its API with the admin key (Basic or Bearer)', async () => {
    const page = await fetch(`${s.base}/admin/queues`, { headers: basic(ADMIN_KEY) })
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    const api = await fetch(`${s.base}/admin/queues/api/queues`, { headers: bearer(ADMIN_KEY) })
    expect(api.status).toBe(200)
    const names = ((await api.json()) as any).queues.map((q: any) => q.name)
    expect(names).toContain('transaction-bundle')
    expect(names).toContain('admin')
  })
})
