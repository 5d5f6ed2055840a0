// Patient API edge: organization API keys, the Version header, X-Request-Id, the error envelope on
// unknown paths, methods, bodies, the admin endpoints' scope, and the OpenAPI document.
import { describe, expect, test } from 'bun:test'
import { API_VERSIONS } from '../shared/patients/versions'
import { createApiKey } from '../shared/auth/api-keys'
import { ADMIN_KEY, useTestServer, readJson } from './harness'
import { adminFetch, call, createOrg, expectError } from './patients-client'

const s = useTestServer()

describe('API keys of organizations', () => {
  test('no Authorization header: 401 missing_api_key', async () => {
    const org = await createOrg(s)
    const res = await call(s, org, '/patients', { key: null })
    await expectError(res, 401, 'authentication_error', 'missing_api_key', null)
    expect(res.headers.get('www-authenticate')).toBe('Bearer')
  })

  test('unknown key, malformed header, and the FHIR server admin key: 401 invalid_api_key', async () => {
    const org = await createOrg(s)
    await expectError(await call(s, org, '/patients', { key: 'pk_live_nope' }), 401, 'authentication_error', 'invalid_api_key')
    await expectError(await call(s, org, '/patients', { key: ADMIN_KEY }), 401, 'authentication_error', 'invalid_api_key')
    const res = await call(s, org, '/patients', { headers: { authorization: 'Basic abc' }, key: null })
    await expectError(res, 401, 'authentication_error', 'missing_api_key')
  })

  test('a key is shown once, stored hashed, and works until revoked', async () => {
    const org = await createOrg(s)
    const created = await readJson(await adminFetch(s, `/admin/organizations/${org.id}/api-keys`, { method: 'POST', json: { label: 'second' } }))
    expect(created.key).toStartWith('pk_live_')
    const [row] = await s.sql`select key_hash from organization_api_key where id = ${created.id}`
    expect(row.key_hash).not.toContain(created.key)
    expect(row.key_hash).toHaveLength(64)
    const listed = await readJson(await adminFetch(s, `/admin/organizations/${org.id}/api-keys`))
    expect(listed.data.map((k: any) => k.id).sort()).toEqual([org.keyId, created.id].sort())
    expect(JSON.stringify(listed)).not.toContain(created.key)
    const revoked = await readJson(await adminFetch(s, `/admin/organizations/${org.id}/api-keys/${created.id}`, { method: 'DELETE' }))
    expect(revoked.revoked_at).toBeString()
    // Never used before revocation, so no verifier cache can hold it.
    await expectError(await call(s, org, '/patients', { key: created.key }), 401, 'authentication_error', 'invalid_api_key')
    expect((await call(s, org, '/patients')).status).toBe(200)
  })

  test("revoking another organization's key is 404", async () => {
    const a = await createOrg(s)
    const b = await createOrg(s)
    await expectError(
      await adminFetch(s, `/admin/organizations/${a.id}/api-keys/${b.keyId}`, { method: 'DELETE' }),
      404,
      'not_found_error',
      'resource_not_found',
    )
  })
})

describe('Version header', () => {
  test('absent: the key pinned version; an accepted one: served', async () => {
    const org = await createOrg(s)
    expect((await call(s, org, '/patients')).status).toBe(200)
    for (const v of API_VERSIONS) expect((await call(s, org, '/patients', { headers: { version: v } })).status).toBe(200)
  })

  test('unknown version: 400 unsupported_api_version, param Version', async () => {
    const org = await createOrg(s)
    for (const v of ['2020-01-01', 'latest', '2026-04-25x']) {
      const res = await call(s, org, '/patients', { headers: { version: v } })
      await expectError(res, 400, 'invalid_request_error', 'unsupported_api_version', 'Version')
    }
    const post = await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'v1' }, headers: { version: '1999-01-01' } })
    await expectError(post, 400, 'invalid_request_error', 'unsupported_api_version')
    expect((await call(s, org, '/patients/v1')).status).toBe(404) // nothing was created
  })

  test('a key pins an accepted version only', async () => {
    const org = await createOrg(s)
    const bad = await adminFetch(s, `/admin/organizations/${org.id}/api-keys`, { method: 'POST', json: { version: '2001-01-01' } })
    await expectError(bad, 400, 'invalid_request_error', 'unsupported_api_version', 'version')
    const good = await readJson(await adminFetch(s, `/admin/organizations/${org.id}/api-keys`, { method: 'POST', json: { version: API_VERSIONS[0] } }))
    expect(good.version).toBe(API_VERSIONS[0])
  })
})

describe('X-Request-Id and the envelope', () => {
  test('every answer carries X-Request-Id; errors repeat it as error.request_id', async () => {
    const org = await createOrg(s)
    const okRes = await call(s, org, '/patients')
    expect(okRes.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    const err = await expectError(await call(s, org, '/patients/nobody'), 404, 'not_found_error', 'resource_not_found', 'id')
    expect(err.doc_url).toBe(`${s.base}/docs/errors#resource_not_found`)
    const mine = await call(s, org, '/patients/nobody', { headers: { 'x-request-id': 'client-trace-12345' } })
    expect(mine.headers.get('x-request-id')).toBe('client-trace-12345')
    expect((await readJson(mine)).error.request_id).toBe('client-trace-12345')
    const odd = await call(s, org, '/patients', { headers: { 'x-request-id': 'bad id with spaces' } })
    expect(odd.headers.get('x-request-id')).not.toBe('bad id with spaces')
  })

  test('unknown path 404 and wrong method 405, enveloped', async () => {
    const org = await createOrg(s)
    await expectError(await call(s, org, '/patients/x/unknown'), 404, 'not_found_error', 'resource_not_found')
    await expectError(await call(s, org, '/patients/x', { method: 'PATCH', json: {} }), 405, 'invalid_request_error', 'bad_request')
    await expectError(await call(s, org, '/patient-flows', { method: 'GET' }), 405, 'invalid_request_error', 'bad_request')
    await expectError(await call(s, org, '/sessions/sess_x', { method: 'GET' }), 404, 'not_found_error', 'resource_not_found')
  })

  test('malformed JSON and a non-object body: 400 bad_request; a body over 1 MiB: 413 payload_too_large', async () => {
    const org = await createOrg(s)
    const headers = { 'content-type': 'application/json' }
    await expectError(await call(s, org, '/patients', { method: 'POST', body: '{"patient_id":', headers }), 400, 'invalid_request_error', 'bad_request', null)
    await expectError(await call(s, org, '/patients', { method: 'POST', body: '["a"]', headers }), 400, 'invalid_request_error', 'bad_request')
    const big = JSON.stringify({ patient_id: 'big', name: 'x'.repeat(1024 * 1024) })
    await expectError(await call(s, org, '/patients', { method: 'POST', body: big, headers }), 413, 'invalid_request_error', 'payload_too_large')
  })
})

describe('admin endpoints', () => {
  test('need an admin-scope key of the FHIR server: 401 without, 403 with a read key, enveloped', async () => {
    await expectError(await adminFetch(s, '/admin/organizations', { key: null }), 401, 'authentication_error', 'invalid_api_key')
    const { key } = await createApiKey(s.sql, 'reader', ['read', 'write'])
    await expectError(await adminFetch(s, '/admin/organizations', { key }), 403, 'permission_error', 'forbidden')
    const org = await createOrg(s)
    await expectError(await adminFetch(s, '/admin/organizations', { key: org.key }), 401, 'authentication_error', 'invalid_api_key')
  })

  test('organizations: create (name required), list, read, 404', async () => {
    await expectError(await adminFetch(s, '/admin/organizations', { method: 'POST', json: {} }), 400, 'invalid_request_error', 'bad_request', 'name')
    await expectError(
      await adminFetch(s, '/admin/organizations', { method: 'POST', json: { name: 'x', extra: 1 } }),
      400,
      'invalid_request_error',
      'bad_request',
      'extra',
    )
    const org = await readJson(await adminFetch(s, '/admin/organizations', { method: 'POST', json: { name: 'Clinic' } }))
    expect(org).toMatchObject({ resource_type: 'organization', name: 'Clinic' })
    expect((await readJson(await adminFetch(s, `/admin/organizations/${org.id}`))).id).toBe(org.id)
    const list = await readJson(await adminFetch(s, '/admin/organizations'))
    expect(list.data.map((o: any) => o.id)).toContain(org.id)
    await expectError(await adminFetch(s, '/admin/organizations/org_missing'), 404, 'not_found_error', 'resource_not_found')
    await expectError(
      await adminFetch(s, '/admin/organizations/org_missing/api-keys', { method: 'POST', json: {} }),
      404,
      'not_found_error',
      'resource_not_found',
    )
  })
})

test('GET /openapi.json describes the API', async () => {
  const res = await fetch(`${s.base}/openapi.json`)
  expect(res.status).toBe(200)
  expect(res.headers.get('x-request-id')).toBeString()
  const doc = await readJson(res)
  expect(doc.openapi).toStartWith('3.1')
  expect(Object.keys(doc.paths)).toEqual(
    expect.arrayContaining([
      '/patients',
      '/patients/{id}',
      '/patient-flows',
      '/patient-flows/{id}',
      '/sessions',
      '/patients/{id}/sessions',
      '/patients/{id}/patient-flows',
      '/patients/{id}/$everything',
      '/connections',
      '/connections/{id}',
    ]),
  )
  expect(doc.components.schemas.PatientFlowCreate.additionalProperties).toBe(false)
  expect(doc.components.schemas.Error.properties.error.required).toEqual(['type', 'code', 'message', 'param', 'doc_url', 'request_id'])
})
