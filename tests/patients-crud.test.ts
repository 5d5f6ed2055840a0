// Patients: create with its rules, read with connections, full replace, list filters, delete cascading
// to flows, sessions, connections and the stored FHIR records, and isolation between organizations.
import { describe, expect, test } from 'bun:test'
import { recordConnection } from '../shared/patients/connections'
import { patientIdSystem } from '../shared/patients/identifier'
import { INLINE_RECORDS } from '../shared/patients/patient-deletion'
import { createResource, useTestServer, readJson } from './harness'
import { call, createOrg, createSource, expectError } from './patients-client'

const s = useTestServer()

const post = (org: any, json: unknown) => call(s, org, '/patients', { method: 'POST', json })

describe('POST /patients', () => {
  test('creates the plain patient (200)', async () => {
    const org = await createOrg(s)
    const res = await post(org, { patient_id: 'user_42', email: 'ann@example.com', name: 'Ann', metadata: { plan: 'gold', n: 3 } })
    expect(res.status).toBe(200)
    const p = await readJson(res)
    expect(p).toEqual({
      id: 'user_42',
      resource_type: 'patient',
      email: 'ann@example.com',
      name: 'Ann',
      metadata: { plan: 'gold', n: 3 },
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    })
    const minimal = await readJson(await post(org, { patient_id: 'min' }))
    expect(minimal).toMatchObject({ email: null, name: null, metadata: {} })
  })

  test('duplicate patient_id: 409 external_id_already_exists', async () => {
    const org = await createOrg(s)
    expect((await post(org, { patient_id: 'dup' })).status).toBe(200)
    await expectError(await post(org, { patient_id: 'dup' }), 409, 'conflict_error', 'external_id_already_exists', 'patient_id')
  })

  test('patient_id rules: required, 1-200 characters, no reserved prefix', async () => {
    const org = await createOrg(s)
    await expectError(await post(org, {}), 400, 'invalid_request_error', 'bad_request', 'patient_id')
    await expectError(await post(org, { patient_id: '' }), 400, 'invalid_request_error', 'invalid_data', 'patient_id')
    await expectError(await post(org, { patient_id: 'x'.repeat(201) }), 400, 'invalid_request_error', 'invalid_data', 'patient_id')
    expect((await post(org, { patient_id: 'y'.repeat(200) })).status).toBe(200)
    await expectError(await post(org, { patient_id: 42 }), 400, 'invalid_request_error', 'invalid_data', 'patient_id')
    for (const prefix of ['pat_', 'pf_', 'conn_', 'fhirsrc_', 'wh_', 'evt_', 'sess_'])
      await expectError(await post(org, { patient_id: `${prefix}1` }), 400, 'invalid_request_error', 'invalid_data', 'patient_id')
  })

  test('email, name and metadata rules; unknown fields', async () => {
    const org = await createOrg(s)
    await expectError(await post(org, { patient_id: 'e', email: 'not-an-email' }), 400, 'invalid_request_error', 'invalid_data', 'email')
    await expectError(await post(org, { patient_id: 'e', name: 'n'.repeat(201) }), 400, 'invalid_request_error', 'invalid_data', 'name')
    await expectError(await post(org, { patient_id: 'e', metadata: [1] }), 400, 'invalid_request_error', 'invalid_data', 'metadata')
    await expectError(await post(org, { patient_id: 'e', metadata: { a: { nested: true } } }), 400, 'invalid_request_error', 'invalid_data', 'metadata.a')
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']))
    await expectError(await post(org, { patient_id: 'e', metadata: many }), 400, 'invalid_request_error', 'invalid_data', 'metadata')
    await expectError(await post(org, { patient_id: 'e', metadata: { ['k'.repeat(41)]: 'v' } }), 400, 'invalid_request_error', 'invalid_data')
    await expectError(await post(org, { patient_id: 'e', metadata: { k: 'v'.repeat(501) } }), 400, 'invalid_request_error', 'invalid_data', 'metadata.k')
    await expectError(await post(org, { patient_id: 'e', nickname: 'x' }), 400, 'invalid_request_error', 'bad_request', 'nickname')
    expect((await call(s, org, '/patients/e')).status).toBe(404)
  })
})

describe('GET /patients/{id}', () => {
  test('the patient with its connections, newest first', async () => {
    const org = await createOrg(s)
    const src = await createSource(s)
    await post(org, { patient_id: 'c1' })
    const first = await recordConnection(s.sql, {
      organizationId: org.id,
      patientId: 'c1',
      fhirSourceId: src.id,
      flowId: null,
      status: 'failed',
      failureCode: 'user_denied',
    })
    const second = await recordConnection(s.sql, {
      organizationId: org.id,
      patientId: 'c1',
      fhirSourceId: src.id,
      flowId: null,
      status: 'active',
      scopes: ['patient/*.read'],
    })
    const p = await readJson(await call(s, org, '/patients/c1'))
    expect(p.connections.map((c: any) => c.id)).toEqual([second.id, first.id])
    expect(p.connections[0]).toMatchObject({
      resource_type: 'connection',
      connection_id: src.id,
      status: 'active',
      scopes: ['patient/*.read'],
      failure_code: null,
    })
    expect(p.connections[1]).toMatchObject({ status: 'failed', failure_code: 'user_denied', failure_at: expect.any(String) })
    // A list item is the plain patient.
    const list = await readJson(await call(s, org, '/patients?patient_id=c1'))
    expect(list.data[0].connections).toBeUndefined()
  })

  test('ids with reserved URL characters round-trip', async () => {
    const org = await createOrg(s)
    await post(org, { patient_id: 'a b/c?d' })
    const p = await readJson(await call(s, org, `/patients/${encodeURIComponent('a b/c?d')}`))
    expect(p.id).toBe('a b/c?d')
  })
})

describe('PUT /patients/{id}', () => {
  test('full replace: omitted optional fields are cleared', async () => {
    const org = await createOrg(s)
    await post(org, { patient_id: 'r1', email: 'r@example.com', name: 'R', metadata: { a: '1' } })
    const res = await call(s, org, '/patients/r1', { method: 'PUT', json: { patient_id: 'r1', name: 'New' } })
    expect(res.status).toBe(200)
    expect(await readJson(res)).toMatchObject({ id: 'r1', email: null, name: 'New', metadata: {} })
    expect(await readJson(await call(s, org, '/patients/r1'))).toMatchObject({ email: null, name: 'New', metadata: {} })
  })

  test('body/URL patient_id mismatch 400; missing patient_id 400; unknown patient 404; rules apply', async () => {
    const org = await createOrg(s)
    await post(org, { patient_id: 'r2' })
    await expectError(
      await call(s, org, '/patients/r2', { method: 'PUT', json: { patient_id: 'other' } }),
      400,
      'invalid_request_error',
      'bad_request',
      'patient_id',
    )
    await expectError(await call(s, org, '/patients/r2', { method: 'PUT', json: { name: 'x' } }), 400, 'invalid_request_error', 'bad_request', 'patient_id')
    await expectError(
      await call(s, org, '/patients/r2', { method: 'PUT', json: { patient_id: 'r2', email: 'bad' } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'email',
    )
    await expectError(await call(s, org, '/patients/nope', { method: 'PUT', json: { patient_id: 'nope' } }), 404, 'not_found_error', 'resource_not_found')
  })
})

describe('GET /patients', () => {
  test('filters patient_id and email (exact)', async () => {
    const org = await createOrg(s)
    await post(org, { patient_id: 'f1', email: 'same@example.com' })
    await post(org, { patient_id: 'f2', email: 'same@example.com' })
    await post(org, { patient_id: 'f3', email: 'other@example.com' })
    const byEmail = await readJson(await call(s, org, '/patients?email=same@example.com'))
    expect(byEmail.data.map((p: any) => p.id)).toEqual(['f2', 'f1'])
    const byId = await readJson(await call(s, org, '/patients?patient_id=f3'))
    expect(byId.data.map((p: any) => p.id)).toEqual(['f3'])
    expect((await readJson(await call(s, org, '/patients?email=SAME@example.com'))).data).toEqual([])
  })
})

describe('DELETE /patients/{id}', () => {
  test('tombstone; cascades to flows, sessions, connections and the FHIR records; the id can be reused', async () => {
    const org = await createOrg(s)
    const src = await createSource(s)
    await post(org, { patient_id: 'd1' })
    const flow = await readJson(
      await call(s, org, '/patient-flows', { method: 'POST', json: { patient_id: 'd1', return_url: 'https://app.example.com/back' } }),
    )
    const sess = await readJson(await call(s, org, '/sessions', { method: 'POST', json: { patient_id: 'd1', return_url: 'https://app.example.com/back' } }))
    await recordConnection(s.sql, { organizationId: org.id, patientId: 'd1', fhirSourceId: src.id, flowId: flow.id, status: 'active' })
    const fhirPatient = await createResource(s, { resourceType: 'Patient', identifier: [{ system: patientIdSystem(org.id), value: 'd1' }] })
    const obs = await createResource(s, {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'x' },
      subject: { reference: `Patient/${fhirPatient.id}` },
    })
    const unrelated = await createResource(s, { resourceType: 'Patient', identifier: [{ system: patientIdSystem(org.id), value: 'd2' }] })

    const res = await call(s, org, '/patients/d1', { method: 'DELETE' })
    expect(res.status).toBe(200)
    expect(await readJson(res)).toEqual({ id: 'd1', resource_type: 'patient', deleted: true })

    await expectError(await call(s, org, '/patients/d1'), 404, 'not_found_error', 'resource_not_found')
    await expectError(await call(s, org, `/patient-flows/${flow.id}`), 404, 'not_found_error', 'resource_not_found')
    const [{ n }] =
      await s.sql`select (select count(*) from patient_flow where id in (${flow.id}, ${sess.id})) + (select count(*) from connection where patient_id = 'd1') as n`
    expect(Number(n)).toBe(0)
    expect((await s.fhirFetch(`/Patient/${fhirPatient.id}`)).status).toBe(410)
    expect((await s.fhirFetch(`/Observation/${obs.id}`)).status).toBe(410)
    expect((await s.fhirFetch(`/Patient/${unrelated.id}`)).status).toBe(200)

    await expectError(await call(s, org, '/patients/d1', { method: 'DELETE' }), 404, 'not_found_error', 'resource_not_found')
    expect((await post(org, { patient_id: 'd1' })).status).toBe(200)
    expect((await readJson(await call(s, org, '/patients/d1'))).connections).toEqual([])
  })

  test('more records than INLINE_RECORDS: deleted by the background job, every one', async () => {
    const org = await createOrg(s)
    await post(org, { patient_id: 'big' })
    const fhirPatient = await createResource(s, { resourceType: 'Patient', identifier: [{ system: patientIdSystem(org.id), value: 'big' }] })
    const n = INLINE_RECORDS + 20
    const entry = Array.from({ length: n }, () => ({
      resource: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${fhirPatient.id}` } },
      request: { method: 'POST', url: 'Observation' },
    }))
    const tx = await s.fhirFetch('', { method: 'POST', json: { resourceType: 'Bundle', type: 'transaction', entry } })
    expect(tx.status).toBe(200)
    const live = () =>
      s.sql`select count(distinct r.rid)::int as n from resource r join idx_reference i on i.rid = r.rid where i.target_id = ${fhirPatient.id} and not r.deleted`
    expect((await live())[0].n).toBe(n)
    const res = await call(s, org, '/patients/big', { method: 'DELETE' })
    expect(res.status).toBe(200)
    for (let i = 0; i < 100 && (await live())[0].n > 0; i++) await Bun.sleep(100)
    expect((await live())[0].n).toBe(0)
    for (let i = 0; i < 50 && (await s.fhirFetch(`/Patient/${fhirPatient.id}`)).status !== 410; i++) await Bun.sleep(100)
    expect((await s.fhirFetch(`/Patient/${fhirPatient.id}`)).status).toBe(410)
  })
})

describe('organizations are isolated', () => {
  test("another organization's patient is invisible: 404 everywhere, absent from lists, its id free", async () => {
    const a = await createOrg(s)
    const b = await createOrg(s)
    await post(a, { patient_id: 'shared-id', email: 'a@example.com' })
    const flow = await readJson(await call(s, a, '/patient-flows', { method: 'POST', json: { patient_id: 'shared-id', return_url: 'https://a.example.com' } }))
    await expectError(await call(s, b, '/patients/shared-id'), 404, 'not_found_error', 'resource_not_found')
    await expectError(
      await call(s, b, '/patients/shared-id', { method: 'PUT', json: { patient_id: 'shared-id' } }),
      404,
      'not_found_error',
      'resource_not_found',
    )
    await expectError(await call(s, b, '/patients/shared-id', { method: 'DELETE' }), 404, 'not_found_error', 'resource_not_found')
    await expectError(await call(s, b, '/patients/shared-id/patient-flows'), 404, 'not_found_error', 'resource_not_found')
    await expectError(await call(s, b, '/patients/shared-id/sessions'), 404, 'not_found_error', 'resource_not_found')
    await expectError(await call(s, b, '/patients/shared-id/$everything'), 404, 'not_found_error', 'resource_not_found')
    await expectError(await call(s, b, `/patient-flows/${flow.id}`), 404, 'not_found_error', 'resource_not_found')
    expect((await readJson(await call(s, b, '/patients?email=a@example.com'))).data).toEqual([])
    expect((await readJson(await call(s, b, '/patients'))).data).toEqual([])
    // b may use the same patient_id for its own patient; a's is untouched.
    expect((await post(b, { patient_id: 'shared-id', email: 'b@example.com' })).status).toBe(200)
    expect((await readJson(await call(s, a, '/patients/shared-id'))).email).toBe('a@example.com')
  })
})
