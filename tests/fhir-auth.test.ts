// API keys on /fhir: missing or bad keys 401 (with WWW-Authenticate), too narrow a scope 403, revoked
// keys stop working once the verifier's cache expires (KEY_CACHE_MS, 1 s here); /metadata is open.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { type TestServer, readJson, startTestServer } from './harness'

let s: TestServer
let patientId: string

beforeAll(async () => {
  s = await startTestServer({ KEY_CACHE_MS: '1000' })
  const res = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true } })
  expect(res.status).toBe(201)
  patientId = (await readJson(res)).id
}, 120_000)

afterAll(async () => {
  await s.stop()
}, 120_000)

async function rowCount(): Promise<number> {
  const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource`
  return n
}

async function expectOutcome(res: Response): Promise<void> {
  expect((await readJson(res)).resourceType).toBe('OperationOutcome')
}

describe('authentication', () => {
  test('no Authorization header: 401 with WWW-Authenticate and an OperationOutcome', async () => {
    const res = await s.fhirFetch(`/Patient/${patientId}`, { key: null })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/i)
    await expectOutcome(res)
  })

  test('no key on a write: 401 and nothing written', async () => {
    const before = await rowCount()
    const res = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient' }, key: null })
    expect(res.status).toBe(401)
    expect(await rowCount()).toBe(before)
  })

  test('an unknown key: 401', async () => {
    const res = await s.fhirFetch(`/Patient/${patientId}`, { key: 'fk_this-key-does-not-exist' })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/i)
    await expectOutcome(res)
  })

  test('a non-Bearer Authorization header: 401', async () => {
    const res = await s.fhirFetch(`/Patient/${patientId}`, { key: null, headers: { authorization: 'Basic dXNlcjpwYXNz' } })
    expect(res.status).toBe(401)
  })

  test('GET /fhir/metadata needs no key', async () => {
    const res = await s.fhirFetch('/metadata', { key: null })
    expect(res.status).toBe(200)
    expect((await readJson(res)).resourceType).toBe('CapabilityStatement')
  })
})

describe('scopes', () => {
  test('a read key can GET but not POST (403, nothing written)', async () => {
    const { key } = await createApiKey(s.sql, 'reader', ['read'])
    const read = await s.fhirFetch(`/Patient/${patientId}`, { key })
    expect(read.status).toBe(200)
    const history = await s.fhirFetch(`/Patient/${patientId}/_history`, { key })
    expect(history.status).toBe(200)
    const before = await rowCount()
    const post = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient' }, key })
    expect(post.status).toBe(403)
    await expectOutcome(post)
    const del = await s.fhirFetch(`/Patient/${patientId}`, { method: 'DELETE', key })
    expect(del.status).toBe(403)
    expect(await rowCount()).toBe(before)
    expect((await s.fhirFetch(`/Patient/${patientId}`)).status).toBe(200)
  })

  test('a write key can create, update and read', async () => {
    const { key } = await createApiKey(s.sql, 'writer', ['write'])
    const post = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true }, key })
    expect(post.status).toBe(201)
    const id = (await readJson(post)).id
    const put = await s.fhirFetch(`/Patient/${id}`, { method: 'PUT', json: { resourceType: 'Patient', id, active: false }, key })
    expect(put.status).toBe(200)
    expect((await s.fhirFetch(`/Patient/${id}`, { key })).status).toBe(200)
  })
})

describe('revocation', () => {
  test('a key revoked before its first use is refused at once', async () => {
    const { id, key } = await createApiKey(s.sql, 'revoked-early', ['read'])
    await s.sql`update api_key set revoked_at = now() where id = ${id}`
    const res = await s.fhirFetch(`/Patient/${patientId}`, { key })
    expect(res.status).toBe(401)
  })

  test('a key revoked after use stops working within the cache time', async () => {
    const { id, key } = await createApiKey(s.sql, 'revoked-later', ['read'])
    expect((await s.fhirFetch(`/Patient/${patientId}`, { key })).status).toBe(200)
    await s.sql`update api_key set revoked_at = now() where id = ${id}`
    await Bun.sleep(1_500)
    const res = await s.fhirFetch(`/Patient/${patientId}`, { key })
    expect(res.status).toBe(401)
  }, 10_000)
})
