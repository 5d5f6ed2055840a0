// Issue 19, rate limits on every surface: per API key on /fhir (FHIR_RATE_LIMIT), per address for traffic
// without a valid key on /fhir and the patient API alike (ANONYMOUS_RATE_LIMIT); counted in Redis in the
// cluster form; a refusal is 429 with Retry-After, and answers carry RateLimit-Policy and RateLimit.
import { expect, test } from 'bun:test'
import IORedis from 'ioredis'
import { createApiKey } from '../shared/auth/api-keys'
import { readJson, useTestServer } from './harness'

const s = useTestServer({ FHIR_RATE_LIMIT: '5', ANONYMOUS_RATE_LIMIT: '3', RATE_WINDOW_MS: '3600000' })

test('per API key on /fhir: the 6th request of the window is 429 with Retry-After; other keys go on', async () => {
  const { key } = await createApiKey(s.sql, 'limited', ['read'])
  for (let i = 0; i < 5; i++) {
    const res = await s.fhirFetch('/Patient?_count=1', { key })
    expect(res.status).toBe(200)
    expect(res.headers.get('ratelimit-policy')).toBe('"per-key";q=5;w=3600')
    expect(res.headers.get('ratelimit')).toStartWith(`"per-key";r=${4 - i};t=`)
    await res.arrayBuffer()
  }
  const refused = await s.fhirFetch('/Patient?_count=1', { key })
  expect(refused.status).toBe(429)
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(refused.headers.get('ratelimit')).toStartWith('"per-key";r=0;t=')
  const body = await readJson(refused)
  expect(body.resourceType).toBe('OperationOutcome')
  expect(body.issue[0].diagnostics).toContain('FHIR_RATE_LIMIT')
  const other = await createApiKey(s.sql, 'other', ['read'])
  expect((await s.fhirFetch('/Patient?_count=1', { key: other.key })).status).toBe(200)
  // Counted in Redis, where every API node adds its requests: the server sends its counts IDLE_FLUSH_MS
  // (100 ms) after the last request, and Redis answers when it does (a fixed 200 ms was not enough on a
  // loaded machine), so the counts are read until they are there, for up to 15 s.
  const redis = new IORedis(s.config.redisUrl as string)
  try {
    let counts: number[] = []
    for (const until = Date.now() + 15_000; Date.now() < until; await Bun.sleep(50)) {
      const keys = await redis.keys(`${s.config.queuePrefix}:fhir:rate:*`)
      counts = (await Promise.all(keys.map((k) => redis.get(k)))).map(Number).sort((a, b) => a - b)
      if (counts.length >= 2 && counts.reduce((a, b) => a + b, 0) >= 7) break
    }
    expect(counts).toEqual([1, 6])
  } finally {
    redis.disconnect()
  }
})

test('without a valid key, per address on every surface: 401 three times, then 429 (also for a valid key-less read)', async () => {
  for (let i = 0; i < 3; i++) expect((await s.fhirFetch('/Patient', { key: 'not-a-key' })).status).toBe(401)
  const refused = await s.fhirFetch('/Patient', { key: 'not-a-key' })
  expect(refused.status).toBe(429)
  expect(refused.headers.get('ratelimit-policy')).toBe('"per-address";q=3;w=3600')
  expect((await readJson(refused)).issue[0].diagnostics).toContain('ANONYMOUS_RATE_LIMIT')
  // The same address on the patient API, with a bad key: refused too.
  const patients = await fetch(`${s.base}/patients`, { headers: { authorization: 'Bearer nope' } })
  expect(patients.status).toBe(429)
  expect((await readJson(patients)).error.code).toBe('throttled')
  // The open capability statement counts as traffic without a key.
  expect((await fetch(`${s.fhir}/metadata`)).status).toBe(429)
  // A valid key is not held back by its address.
  expect((await s.fhirFetch('/metadata')).status).toBe(200)
})
