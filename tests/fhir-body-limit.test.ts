// The request body limit (MAX_BODY_BYTES): an over-limit body gets 413 with an OperationOutcome and
// nothing is written.
import { expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'

const s = useTestServer({ MAX_BODY_BYTES: '1000' })

async function rowCount(): Promise<number> {
  const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource`
  return n
}

const big = { resourceType: 'Patient', name: [{ family: 'x'.repeat(2000) }] }

test('a body under the limit is accepted', async () => {
  const res = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true } })
  expect(res.status).toBe(201)
})

test('a body over MAX_BODY_BYTES: 413 with an OperationOutcome, nothing written', async () => {
  const before = await rowCount()
  const res = await s.fhirFetch('/Patient', { method: 'POST', json: big })
  expect(res.status).toBe(413)
  expect((await readJson(res)).resourceType).toBe('OperationOutcome')
  expect(await rowCount()).toBe(before)
})

test('an over-limit body without Content-Length (streamed): 413', async () => {
  const before = await rowCount()
  const bytes = new TextEncoder().encode(JSON.stringify(big))
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 256) controller.enqueue(bytes.slice(i, i + 256))
      controller.close()
    },
  })
  const res = await fetch(`${s.fhir}/Patient`, {
    method: 'POST',
    body: stream,
    headers: { authorization: `Bearer ${s.config.adminApiKey}`, 'content-type': 'application/fhir+json' },
  })
  expect(res.status).toBe(413)
  expect((await readJson(res)).resourceType).toBe('OperationOutcome')
  expect(await rowCount()).toBe(before)
})

test('an over-limit PUT: 413', async () => {
  const res = await s.fhirFetch('/Patient/too-big', { method: 'PUT', json: { ...big, id: 'too-big' } })
  expect(res.status).toBe(413)
  expect((await s.fhirFetch('/Patient/too-big')).status).toBe(404)
})

test('an over-limit Bundle posted to the base (read as bytes, streamed or not): 413, nothing written', async () => {
  const before = await rowCount()
  const bundle = { resourceType: 'Bundle', type: 'transaction', entry: [{ resource: big, request: { method: 'POST', url: 'Patient' } }] }
  const res = await s.fhirFetch('', { method: 'POST', json: bundle })
  expect(res.status).toBe(413)
  expect((await readJson(res)).resourceType).toBe('OperationOutcome')
  const bytes = new TextEncoder().encode(JSON.stringify(bundle))
  const streamed = await fetch(s.fhir, {
    method: 'POST',
    body: new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 256) controller.enqueue(bytes.slice(i, i + 256))
        controller.close()
      },
    }),
    headers: { authorization: `Bearer ${s.config.adminApiKey}`, 'content-type': 'application/fhir+json' },
  })
  expect(streamed.status).toBe(413)
  expect(await rowCount()).toBe(before)
})
