// Issue 19, authorisation: every entry of a batch or transaction is authorised exactly as the same call
// made alone (a write key gets 403 for the admin operations $get-resource-counts and $meta, per entry in a
// batch, for the whole transaction), and a request without a valid key is refused before its body is read.
import { beforeAll, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { readJson, useTestServer } from './harness'

const s = useTestServer()
let writeKey = ''
let readKey = ''

beforeAll(async () => {
  writeKey = (await createApiKey(s.sql, 'writer', ['write'])).key
  readKey = (await createApiKey(s.sql, 'reader', ['read'])).key
})

const bundle = (type: string, entry: any[]) => ({ resourceType: 'Bundle', type, entry })
const get = (url: string) => ({ request: { method: 'GET', url } })

test('alone, the admin operations are 403 for a write key', async () => {
  for (const path of ['/$get-resource-counts', '/$meta']) expect((await s.fhirFetch(path, { key: writeKey })).status).toBe(403)
})

test('a batch: each entry answered as the same call alone (403 for admin operations, 200 for a read)', async () => {
  const patient = await readJson(await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true } }))
  const res = await s.fhirFetch('', {
    method: 'POST',
    key: writeKey,
    json: bundle('batch', [get('$get-resource-counts'), get('$meta'), get('Patient/$meta'), get(`Patient/${patient.id}`)]),
  })
  expect(res.status).toBe(200)
  const body = await readJson(res)
  expect(body.entry.map((e: any) => e.response.status)).toEqual(['403 Forbidden', '403 Forbidden', '403 Forbidden', '200 OK'])
  expect(body.entry[0].response.outcome.issue[0].code).toBe('security')
  expect(body.entry[0].resource).toBeUndefined()
})

test('a transaction with an entry the key may not make: 403 as a whole, nothing written', async () => {
  const [{ n: before }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource`
  const res = await s.fhirFetch('', {
    method: 'POST',
    key: writeKey,
    json: bundle('transaction', [
      { resource: { resourceType: 'Patient', active: true }, request: { method: 'POST', url: 'Patient' } },
      get('$get-resource-counts'),
    ]),
  })
  expect(res.status).toBe(403)
  expect((await readJson(res)).resourceType).toBe('OperationOutcome')
  const [{ n: after }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource`
  expect(after).toBe(before)
})

test('the admin key still gets the admin operations inside a batch', async () => {
  const res = await s.fhirFetch('', { method: 'POST', json: bundle('batch', [get('$get-resource-counts')]) })
  expect((await readJson(res)).entry[0].response.status).toBe('200 OK')
})

test('a read key cannot post a batch (it is a write), even of reads only', async () => {
  expect((await s.fhirFetch('', { method: 'POST', key: readKey, json: bundle('batch', [get('metadata')]) })).status).toBe(403)
})

test('POST /fhir/metadata with a 32 MB body and no key: 401, the body unread', async () => {
  const body = `<Bundle xmlns="http://hl7.org/fhir">${'<x/>'.repeat(8 * 1024 * 1024)}</Bundle>`
  const res = await fetch(`${s.fhir}/metadata`, { method: 'POST', body, headers: { 'content-type': 'application/fhir+xml' } })
  expect(res.status).toBe(401)
  expect((await res.text()).length).toBeGreaterThan(0)
  // GET stays open.
  expect((await fetch(`${s.fhir}/metadata`)).status).toBe(200)
})
