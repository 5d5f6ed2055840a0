// Bulk jobs one API key may have queued or running at once (BULK_MAX_ACTIVE_PER_KEY): past the cap a
// kick-off is 429 with Retry-After and an OperationOutcome, before anything is recorded; the cap is per key
// and per kind (exports and imports apart), a burst of kick-offs cannot all pass it, and a job that ends
// (DELETE on its status URL) makes room. Imports held running by an origin that never sends a byte.
import { afterAll, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { ASYNC } from './bulk-http'
import { useTestServer } from './harness'
import { importBody } from './ndjson-origin'

// Answers 200 and then nothing: an import of it stays running (BULK_IMPORT_IDLE_TIMEOUT_MS is a minute).
const stalled = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch: () => new Response(new ReadableStream({ pull: () => new Promise(() => {}) }), { headers: { 'content-type': 'application/fhir+ndjson' } }),
})
const origin = `http://127.0.0.1:${stalled.port}`
const s = useTestServer({ BULK_IMPORT_ORIGINS: origin, OUTBOUND_ALLOW: '127.0.0.1', BULK_MAX_ACTIVE_PER_KEY: '2' })
const started: { url: string; key?: string }[] = []

afterAll(() => stalled.stop(true))

/** Cancels the jobs a test started, so that the server stops without waiting on them. */
async function cancelStarted() {
  for (const j of started.splice(0)) await s.fhirFetch(j.url.slice(s.fhir.length), { method: 'DELETE', key: j.key })
}

const importOnce = async (key?: string) => {
  const res = await s.fhirFetch('/$import', { method: 'POST', headers: ASYNC, json: importBody([{ type: 'Patient', url: `${origin}/p.ndjson` }]), key })
  const body = (await res.json()) as any
  if (res.status === 202) started.push({ url: res.headers.get('content-location') as string, key })
  return { status: res.status, body, retryAfter: res.headers.get('retry-after') }
}

test('a key with BULK_MAX_ACTIVE_PER_KEY imports running is refused a third with 429, not another key or an export', async () => {
  expect((await importOnce()).status).toBe(202)
  expect((await importOnce()).status).toBe(202)
  const refused = await importOnce()
  expect(refused.status).toBe(429)
  expect(refused.retryAfter).toBe('30')
  expect(refused.body.resourceType).toBe('OperationOutcome')
  expect(refused.body.issue[0].diagnostics).toContain('BULK_MAX_ACTIVE_PER_KEY')
  const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from admin_job where kind = 'bulk-import'`
  expect(n).toBe(2) // nothing recorded for the refused one

  const other = (await createApiKey(s.sql, 'other importer', ['admin'])).key
  expect((await importOnce(other)).status).toBe(202)
  const exported = await s.fhirFetch('/$export?_type=Patient', { headers: ASYNC })
  expect(exported.status).toBe(202)
  started.push({ url: exported.headers.get('content-location') as string })

  // An import deleted (cancelled) makes room for one more.
  const first = started[0]
  expect((await s.fhirFetch(first.url.slice(s.fhir.length), { method: 'DELETE' })).status).toBe(202)
  started.shift()
  expect((await importOnce()).status).toBe(202)
  expect((await importOnce()).status).toBe(429)
  await cancelStarted()
}, 60_000)

test('a burst of kick-offs from one key: exactly the cap is accepted', async () => {
  const key = (await createApiKey(s.sql, 'burst', ['admin'])).key
  const answers = await Promise.all(Array.from({ length: 8 }, () => importOnce(key)))
  expect(answers.map((a) => a.status).sort()).toEqual([202, 202, 429, 429, 429, 429, 429, 429])
  await cancelStarted()
}, 60_000)
