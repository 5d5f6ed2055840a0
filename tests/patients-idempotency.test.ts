// Idempotency-Key on POST with Stripe's semantics: the same key and body replays the saved response;
// the same key with another body is 409 idempotency_error; validation failures are not saved; keys are
// per organization.
import { describe, expect, test } from 'bun:test'
import { requestHash } from '../shared/patients/idempotency'
import { useTestServer, readJson } from './harness'
import { call, createOrg, expectError } from './patients-client'

const s = useTestServer()
const withKey = (key: string) => ({ 'idempotency-key': key })

describe('Idempotency-Key', () => {
  test('POST /patient-flows replayed: same response, one flow', async () => {
    const org = await createOrg(s)
    const json = { patient_id: 'i1', return_url: 'https://x.example.com' }
    const first = await call(s, org, '/patient-flows', { method: 'POST', json, headers: withKey('k-flow-1') })
    expect(first.status).toBe(200)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    const body = await readJson(first)
    const again = await call(s, org, '/patient-flows', { method: 'POST', json, headers: withKey('k-flow-1') })
    expect(again.status).toBe(200)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await readJson(again)).toEqual(body)
    const list = await readJson(await call(s, org, '/patients/i1/patient-flows'))
    expect(list.data.map((f: any) => f.id)).toEqual([body.id])
    // Without the header every POST is new.
    await call(s, org, '/patient-flows', { method: 'POST', json })
    expect((await readJson(await call(s, org, '/patients/i1/patient-flows'))).data).toHaveLength(2)
  })

  test('POST /patients replayed returns the created patient, not 409', async () => {
    const org = await createOrg(s)
    const a = await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'i2' }, headers: withKey('k-pat') })
    const b = await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'i2' }, headers: withKey('k-pat') })
    expect([a.status, b.status]).toEqual([200, 200])
    expect(await readJson(b)).toEqual(await readJson(a))
    // A saved error is replayed as well (Stripe saves the result of any request that ran).
    const dup1 = await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'i2' }, headers: withKey('k-dup') })
    await expectError(dup1, 409, 'conflict_error', 'external_id_already_exists')
    const dup2 = await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'i2' }, headers: withKey('k-dup') })
    expect(dup2.status).toBe(409)
    expect(dup2.headers.get('idempotent-replayed')).toBe('true')
  })

  test('same key, another body or endpoint: 409 idempotency_error', async () => {
    const org = await createOrg(s)
    await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'i3' }, headers: withKey('k-reuse') })
    const other = await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'i4' }, headers: withKey('k-reuse') })
    await expectError(other, 409, 'idempotency_error', 'idempotency_key_reused', 'Idempotency-Key')
    const elsewhere = await call(s, org, '/sessions', { method: 'POST', json: { patient_id: 'i3' }, headers: withKey('k-reuse') })
    await expectError(elsewhere, 409, 'idempotency_error', 'idempotency_key_reused')
    expect((await call(s, org, '/patients/i4')).status).toBe(404)
  })

  test('a request still running holds its key: 409 idempotency_error', async () => {
    const org = await createOrg(s)
    const body = JSON.stringify({ patient_id: 'i5' })
    await s.sql`insert into idempotency_key (organization_id, key, request_hash) values (${org.id}, 'k-busy', ${requestHash('POST', '/patients', body)})`
    const res = await call(s, org, '/patients', { method: 'POST', body, headers: { ...withKey('k-busy'), 'content-type': 'application/json' } })
    await expectError(res, 409, 'idempotency_error', 'idempotency_key_in_use', 'Idempotency-Key')
    expect((await call(s, org, '/patients/i5')).status).toBe(404)
  })

  test('a request that failed validation is not saved: corrected, the same key works', async () => {
    const org = await createOrg(s)
    const bad = await call(s, org, '/patients', { method: 'POST', json: { patient_id: '' }, headers: withKey('k-fix') })
    await expectError(bad, 400, 'invalid_request_error', 'invalid_data')
    const good = await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'i6' }, headers: withKey('k-fix') })
    expect(good.status).toBe(200)
  })

  test('keys are per organization; a key over 255 characters is 400', async () => {
    const a = await createOrg(s)
    const b = await createOrg(s)
    const ra = await readJson(await call(s, a, '/patients', { method: 'POST', json: { patient_id: 'same' }, headers: withKey('k-org') }))
    const rb = await call(s, b, '/patients', { method: 'POST', json: { patient_id: 'same', name: 'B' }, headers: withKey('k-org') })
    expect(rb.status).toBe(200)
    expect((await readJson(rb)).name).toBe('B')
    expect(ra.name).toBeNull()
    await expectError(
      await call(s, a, '/patients', { method: 'POST', json: { patient_id: 'long' }, headers: withKey('k'.repeat(256)) }),
      400,
      'invalid_request_error',
      'invalid_data',
      'Idempotency-Key',
    )
  })

  test('a saved response older than 24 hours is forgotten', async () => {
    const org = await createOrg(s)
    await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'old1' }, headers: withKey('k-old') })
    await s.sql`update idempotency_key set created_at = now() - interval '25 hours' where organization_id = ${org.id}`
    const res = await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'old2' }, headers: withKey('k-old') })
    expect(res.status).toBe(200)
    expect(res.headers.get('idempotent-replayed')).toBeNull()
  })
})
