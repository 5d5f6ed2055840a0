// Issue 19, per-address rate limits behind nginx or a load balancer: with TRUSTED_PROXIES naming the
// proxy, the client is the address its X-Forwarded-For names (read from the right, past trusted hops), so
// each client behind the proxy has its own count; by default no proxy is trusted and the header is
// ignored (a client cannot pick the address it is counted under).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from './harness'

const LIMITS = { ANONYMOUS_RATE_LIMIT: '2', RATE_WINDOW_MS: '3600000' }
let behindProxy: TestServer
let direct: TestServer
beforeAll(async () => {
  // The tests reach the servers from 127.0.0.1: here that is the proxy.
  behindProxy = await startTestServer({ ...LIMITS, PAGE_RATE_LIMIT: '1', TRUSTED_PROXIES: '127.0.0.0/8, ::1' })
  direct = await startTestServer(LIMITS)
}, 120_000)
afterAll(async () => {
  await behindProxy?.stop()
  await direct?.stop()
})

const keyless = (s: TestServer, forwardedFor: string) =>
  s.fhirFetch('/Patient', { key: 'not-a-key', headers: { 'x-forwarded-for': forwardedFor } }).then((r) => r.status)

test('behind a trusted proxy each forwarded client has its own count', async () => {
  expect(await keyless(behindProxy, '203.0.113.7')).toBe(401)
  expect(await keyless(behindProxy, '203.0.113.7')).toBe(401)
  expect(await keyless(behindProxy, '203.0.113.7')).toBe(429)
  // Another client behind the same proxy is not held back; one more trusted hop is skipped.
  expect(await keyless(behindProxy, '203.0.113.8, 127.0.0.5')).toBe(401)
  // What a client writes itself, left of what the proxy appended, does not change its address.
  expect(await keyless(behindProxy, '198.51.100.1, 203.0.113.7')).toBe(429)
  // The hosted pages and operator endpoints count per forwarded client too (PAGE_RATE_LIMIT 1).
  const page = (client: string) => fetch(`${behindProxy.base}/docs/errors`, { headers: { 'x-forwarded-for': client } }).then((r) => r.status)
  expect(await page('203.0.113.9')).toBe(200)
  expect(await page('203.0.113.9')).toBe(429)
  expect(await page('203.0.113.10')).toBe(200)
})

test('by default X-Forwarded-For is ignored: the peer is the client', async () => {
  expect(await keyless(direct, '203.0.113.1')).toBe(401)
  expect(await keyless(direct, '203.0.113.2')).toBe(401)
  expect(await keyless(direct, '203.0.113.3')).toBe(429)
})

test('a bad TRUSTED_PROXIES entry refuses to start, naming the setting', async () => {
  await expect(startTestServer({ TRUSTED_PROXIES: '10.0.0.0/40' })).rejects.toThrow(/TRUSTED_PROXIES/)
})
