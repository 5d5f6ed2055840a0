// Issue 19, rate limits on every surface: the hosted pages (/connect, /docs) and the operator endpoints
// (/admin, /metrics) have no per-key limit, so each client address has one there (PAGE_RATE_LIMIT), shared
// by those paths; a refusal is 429 with Retry-After and the RateLimit headers, in the operator envelope.
import { expect, test } from 'bun:test'
import { ADMIN_KEY, useTestServer } from './harness'

const s = useTestServer({ PAGE_RATE_LIMIT: '4', RATE_WINDOW_MS: '3600000' })

test('the 5th request of an address to the pages and operator endpoints is 429; /fhir is not counted there', async () => {
  const auth = { authorization: `Bearer ${ADMIN_KEY}` }
  const answered = [
    await fetch(`${s.base}/connect/pf_unknown/not-a-token`),
    await fetch(`${s.base}/docs/errors`),
    await fetch(`${s.base}/admin/jobs`, { headers: auth }),
    await fetch(`${s.base}/metrics`, { headers: auth }),
  ]
  for (const res of answered) {
    expect(res.status).not.toBe(429)
    await res.arrayBuffer()
  }
  // Neither /fhir nor the patient API counts here (they have their own limits), nor a path that merely starts alike.
  expect((await fetch(`${s.base}/fhir/metadata`)).status).toBe(200)
  expect((await fetch(`${s.base}/administrator`)).status).toBe(404)
  const refused = await fetch(`${s.base}/admin/jobs`, { headers: auth })
  expect(refused.status).toBe(429)
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(refused.headers.get('ratelimit-policy')).toBe('"pages-per-address";q=4;w=3600')
  expect(refused.headers.get('ratelimit')).toStartWith('"pages-per-address";r=0;t=')
  expect(refused.headers.get('x-request-id')).toBeTruthy()
  const body = (await refused.json()) as any
  expect(body.error.message).toContain('PAGE_RATE_LIMIT')
  const page = await fetch(`${s.base}/connect/pf_unknown/not-a-token`)
  expect(page.status).toBe(429)
  await page.arrayBuffer()
})
