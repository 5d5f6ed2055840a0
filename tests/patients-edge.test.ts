// The patient API's edge (issue 19's remainder for this surface, issue 24): every answer carries the
// error envelope and X-Request-Id, also a 404 for a path no route knows (sent byte for byte, as a
// browser or proxy could: `/patients/..`), 431 for oversized headers, and a NUL in a path or id is a
// 400, never a 500.
import { beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { call, createOrg, expectError, type Org } from './patients-client'
import { type RawAnswer, rawRequest } from './support/raw-http'

const s = useTestServer()
let org: Org
beforeAll(async () => {
  org = await createOrg(s)
})

const raw = (path: string, extra = '') => rawRequest(s.base, `GET ${path} HTTP/1.1\r\nauthorization: Bearer ${org.key}${extra}`)

function expectEnvelope(res: RawAnswer, status: number, code: string) {
  expect(res.status).toBe(status)
  expect(res.headers['content-type']).toStartWith('application/json')
  const body = JSON.parse(res.body)
  expect(body.error.code).toBe(code)
  expect(Object.keys(body.error).sort()).toEqual(['code', 'doc_url', 'message', 'param', 'request_id', 'type'])
  expect(res.headers['x-request-id']).toBe(body.error.request_id)
}

describe('the envelope on every answer', () => {
  test('unknown paths under the API roots: 404 envelope, also for dot segments sent as is', async () => {
    for (const path of ['/patients/..', '/patients/../x', '/patient-flows/..', '/sessions/./', '/connections/../../etc', '/patients/a/b/c'])
      expectEnvelope(await raw(path), 404, 'resource_not_found')
  })

  test('oversized headers: 431 with the envelope (below the runtime parser limit, which answers bare)', async () => {
    expectEnvelope(await raw('/patients', `\r\nx-filler: ${'a'.repeat(10_000)}`), 431, 'headers_too_large')
    expectEnvelope(await raw('/patient-flows/pf_x', `\r\nx-a: ${'a'.repeat(5_000)}\r\nx-b: ${'b'.repeat(5_000)}`), 431, 'headers_too_large')
    expect((await raw('/patients', `\r\nx-filler: ${'a'.repeat(6_000)}`)).status).toBe(200)
  })

  test('a NUL byte in a path or id: 400 envelope naming the id, never 500', async () => {
    await expectError(await call(s, org, '/patients/a%00b'), 400, 'invalid_request_error', 'invalid_data', 'id')
    await expectError(await call(s, org, '/patient-flows/pf_%00'), 400, 'invalid_request_error', 'invalid_data', 'id')
    await expectError(await call(s, org, '/sessions/sess_a%00'), 400, 'invalid_request_error', 'invalid_data', 'id')
    await expectError(await call(s, org, '/patients/a%00/patient-flows'), 400, 'invalid_request_error', 'invalid_data', 'id')
    await expectError(await call(s, org, '/patients/a%00/$everything'), 400, 'invalid_request_error', 'invalid_data', 'id')
    await expectError(await call(s, org, '/connections/fhirsrc_%00'), 400, 'invalid_request_error', 'invalid_data', 'id')
    await expectError(
      await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'a\u0000b' } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'patient_id',
    )
    await expectError(await call(s, org, '/patients?email=a%00b'), 400, 'invalid_request_error', 'invalid_data', 'email')
  })
})
