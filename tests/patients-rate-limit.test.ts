// Rate limiting per API key: 429 rate_limit_error/throttled with Retry-After once a key used up its
// window, on Redis (shared by nodes) and in memory when there is no Redis.
import { afterAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer, useTestServer } from './harness'
import { call, createOrg, expectError } from './patients-client'

const LIMIT = { PATIENT_API_RATE_LIMIT: '3', PATIENT_API_RATE_WINDOW_MS: '60000' }
const s = useTestServer(LIMIT)

async function exhaust(server: TestServer) {
  const org = await createOrg(server)
  for (let i = 0; i < 3; i++) expect((await call(server, org, '/patients')).status).toBe(200)
  const res = await call(server, org, '/patients')
  const err = await expectError(res, 429, 'rate_limit_error', 'throttled')
  const retry = Number(res.headers.get('retry-after'))
  expect(retry).toBeGreaterThanOrEqual(1)
  expect(retry).toBeLessThanOrEqual(61)
  return { org, err }
}

describe('rate limit', () => {
  test('on Redis: the 4th request of the window is 429 with Retry-After; other keys are unaffected', async () => {
    const { org } = await exhaust(s)
    const other = await createOrg(s)
    expect((await call(s, other, '/patients')).status).toBe(200)
    // POSTs count too, and a refused one runs nothing.
    const post = await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'r' } })
    expect(post.status).toBe(429)
    const [{ n }] = await s.sql`select count(*)::int as n from patient where organization_id = ${org.id}`
    expect(n).toBe(0)
  })

  describe('without Redis', () => {
    let local: TestServer
    afterAll(async () => {
      await local?.stop()
    })
    test('counted in memory', async () => {
      local = await startTestServer({ ...LIMIT, REDIS_URL: '' })
      expect(local.config.redisUrl).toBeUndefined()
      await exhaust(local)
    }, 120_000)
  })
})
