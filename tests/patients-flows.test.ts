// Patient flows and sessions: creation with every validation rule, the patient upsert, picker and
// direct mode, retrieval, per-patient lists, the status lifecycle (lazy expiry, the expiry job,
// terminal states) and the connections a flow made.
import { describe, expect, test } from 'bun:test'
import { recordConnection } from '../shared/patients/connections'
import { completeFlow, expireFlows } from '../shared/patients/flows'
import { FlowExpiryJob } from '../shared/patients/jobs'
import { useTestServer, readJson } from './harness'
import { call, createOrg, createSource, expectError } from './patients-client'

const s = useTestServer()
const RETURN = 'https://app.example.com/return'

const flow = (org: any, json: Record<string, unknown>, path = '/patient-flows') => call(s, org, path, { method: 'POST', json: { return_url: RETURN, ...json } })

describe('POST /patient-flows', () => {
  test('a new flow is open, with the documented fields; expires_at = created_at + expires_in', async () => {
    const org = await createOrg(s)
    const [a, b] = [await createSource(s), await createSource(s)]
    const res = await flow(org, {
      patient_id: 'user_42',
      patient_email: 'p@example.com',
      patient_name: 'Pat',
      recommended_connection_ids: [a.id, b.id],
      return_button_label: 'Acme Health',
      expires_in: 1800,
      metadata: { signup_source: 'checkout' },
    })
    expect(res.status).toBe(200)
    const f = await readJson(res)
    expect(f).toMatchObject({
      resource_type: 'patient_flow',
      status: 'open',
      patient_id: 'user_42',
      connection_id: null,
      recommended_connection_ids: [a.id, b.id],
      return_url: RETURN,
      return_button_label: 'Acme Health',
      connections: [],
      metadata: { signup_source: 'checkout' },
    })
    expect(f.id).toMatch(/^pf_[0-9A-Za-z]{24}$/)
    expect(f.url).toMatch(new RegExp(`^${s.base}/connect/${f.id}/[A-Za-z0-9_-]{32}$`))
    expect(Date.parse(f.expires_at) - Date.parse(f.created_at)).toBe(1800_000)
    expect(f.created_at).toMatch(/\.\d{3}Z$/)
  })

  test('expires_in defaults to 1800 and must be an integer from 60 to 86400', async () => {
    const org = await createOrg(s)
    const f = await readJson(await flow(org, { patient_id: 'e1' }))
    expect(Date.parse(f.expires_at) - Date.parse(f.created_at)).toBe(1800_000)
    for (const ok of [60, 86400]) expect((await flow(org, { patient_id: 'e1', expires_in: ok })).status).toBe(200)
    for (const bad of [59, 86401, 0, -5, 100.5, '1800'])
      await expectError(await flow(org, { patient_id: 'e1', expires_in: bad }), 400, 'invalid_request_error', 'invalid_data', 'expires_in')
  })

  test('upserts the patient: creates it, then updates email and name given, keeps absent ones', async () => {
    const org = await createOrg(s)
    await flow(org, { patient_id: 'u1', patient_email: 'one@example.com', patient_name: 'One' })
    expect(await readJson(await call(s, org, '/patients/u1'))).toMatchObject({ email: 'one@example.com', name: 'One' })
    await flow(org, { patient_id: 'u1', patient_email: 'two@example.com' })
    expect(await readJson(await call(s, org, '/patients/u1'))).toMatchObject({ email: 'two@example.com', name: 'One' })
  })

  test('required fields, URL, label, patient rules, unknown fields: 400 naming the param; nothing stored', async () => {
    const org = await createOrg(s)
    await expectError(
      await call(s, org, '/patient-flows', { method: 'POST', json: { patient_id: 'v' } }),
      400,
      'invalid_request_error',
      'bad_request',
      'return_url',
    )
    await expectError(await flow(org, {}), 400, 'invalid_request_error', 'bad_request', 'patient_id')
    await expectError(await flow(org, { patient_id: 'v', return_url: 'not a url' }), 400, 'invalid_request_error', 'invalid_data', 'return_url')
    await expectError(await flow(org, { patient_id: 'v', return_url: 'javascript:alert(1)' }), 400, 'invalid_request_error', 'invalid_data', 'return_url')
    await expectError(await flow(org, { patient_id: 'v', return_button_label: '' }), 400, 'invalid_request_error', 'invalid_data', 'return_button_label')
    await expectError(
      await flow(org, { patient_id: 'v', return_button_label: 'x'.repeat(61) }),
      400,
      'invalid_request_error',
      'invalid_data',
      'return_button_label',
    )
    await expectError(await flow(org, { patient_id: 'pf_1' }), 400, 'invalid_request_error', 'invalid_data', 'patient_id')
    await expectError(await flow(org, { patient_id: 'v', patient_email: 'nope' }), 400, 'invalid_request_error', 'invalid_data', 'patient_email')
    await expectError(await flow(org, { patient_id: 'v', patient_name: 'n'.repeat(201) }), 400, 'invalid_request_error', 'invalid_data', 'patient_name')
    await expectError(await flow(org, { patient_id: 'v', metadata: 'x' }), 400, 'invalid_request_error', 'invalid_data', 'metadata')
    await expectError(await flow(org, { patient_id: 'v', callback_url: 'https://x' }), 400, 'invalid_request_error', 'bad_request', 'callback_url')
    await expectError(await call(s, org, '/patients/v'), 404, 'not_found_error', 'resource_not_found')
  })

  test('a value of the wrong type: the message names the field and what was expected (no "Expected union value")', async () => {
    const org = await createOrg(s)
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ patient_email: 42 }, 'patient_email', /^Invalid patient_email: expected an email address or null, got number 42$/],
      [{ return_button_label: 'x'.repeat(61) }, 'return_button_label', /^Invalid return_button_label: expected a string of 1 to 60 characters or null/],
      [{ metadata: ['a'] }, 'metadata', /^Invalid metadata: expected a JSON object or null, got an array$/],
      [{ expires_in: '1800' }, 'expires_in', /^Invalid expires_in: expected an integer from 60 to 86400, got a 4-character string$/],
      [{ recommended_connection_ids: 'fhirsrc_x' }, 'recommended_connection_ids', /expected an array of strings or null/],
    ]
    for (const [body, param, message] of cases) {
      const e = await expectError(await flow(org, { patient_id: 'm', ...body }), 400, 'invalid_request_error', 'invalid_data', param)
      expect(e.message).toMatch(message)
      expect(e.message).not.toContain('union')
    }
  })

  test('recommended_connection_ids must name known sources', async () => {
    const org = await createOrg(s)
    const a = await createSource(s)
    await expectError(
      await flow(org, { patient_id: 'k', recommended_connection_ids: [a.id, 'fhirsrc_unknown'] }),
      400,
      'invalid_request_error',
      'invalid_data',
      'recommended_connection_ids',
    )
    await expectError(
      await flow(org, { patient_id: 'k', recommended_connection_ids: 'fhirsrc_x' }),
      400,
      'invalid_request_error',
      'invalid_data',
      'recommended_connection_ids',
    )
    const none = await readJson(await flow(org, { patient_id: 'k' }))
    expect(none.recommended_connection_ids).toEqual([])
  })

  test('direct mode: connection_id (a fhirsrc_ id or a base URL) excludes recommended_connection_ids', async () => {
    const org = await createOrg(s)
    const a = await createSource(s)
    const byId = await readJson(await flow(org, { patient_id: 'd', connection_id: a.id }))
    expect(byId).toMatchObject({ connection_id: a.id, recommended_connection_ids: null })
    const byUrl = await readJson(await flow(org, { patient_id: 'd', connection_id: `${a.fhir_base_url}/` }))
    expect(byUrl.connection_id).toBe(a.id)
    await expectError(
      await flow(org, { patient_id: 'd', connection_id: a.id, recommended_connection_ids: [a.id] }),
      400,
      'invalid_request_error',
      'bad_request',
      'recommended_connection_ids',
    )
    await expectError(await flow(org, { patient_id: 'd', connection_id: 'fhirsrc_nope' }), 400, 'invalid_request_error', 'invalid_data', 'connection_id')
  })
})

describe('sessions: one record, two views', () => {
  test('POST /sessions: same body, sess_ id, resource_type session; each list shows every flow in its own view', async () => {
    const org = await createOrg(s)
    const sess = await readJson(await flow(org, { patient_id: 's1' }, '/sessions'))
    expect(sess.id).toMatch(/^sess_[0-9A-Za-z]{24}$/)
    expect(sess).toMatchObject({ resource_type: 'session', status: 'open' })
    expect(sess.url).toMatch(new RegExp(`^${s.base}/connect/${sess.id}/[A-Za-z0-9_-]{32}$`))
    const pf = await readJson(await flow(org, { patient_id: 's1' }))
    const asFlow = (id: string) => id.replace(/^sess_/, 'pf_')
    const asSession = (id: string) => id.replace(/^pf_/, 'sess_')
    const sessions = await readJson(await call(s, org, '/patients/s1/sessions'))
    expect(sessions.data.map((x: any) => [x.id, x.resource_type])).toEqual([
      [asSession(pf.id), 'session'],
      [sess.id, 'session'],
    ])
    const flows = await readJson(await call(s, org, '/patients/s1/patient-flows'))
    expect(flows.data.map((x: any) => [x.id, x.resource_type])).toEqual([
      [pf.id, 'patient_flow'],
      [asFlow(sess.id), 'patient_flow'],
    ])
    // The two views differ only in id and resource_type.
    const { id: _a, resource_type: _b, ...rest } = sess
    const { id: _c, resource_type: _d, ...restListed } = flows.data[1]
    expect(restListed).toEqual(rest)
    await expectError(await flow(org, { patient_id: 's1', expires_in: 10 }, '/sessions'), 400, 'invalid_request_error', 'invalid_data', 'expires_in')
  })

  test('both ids resolve on both retrieve endpoints, each in its own view; unknown 404', async () => {
    const org = await createOrg(s)
    const sess = await readJson(await flow(org, { patient_id: 's2' }, '/sessions'))
    const pf = await readJson(await flow(org, { patient_id: 's2' }))
    for (const made of [sess, pf]) {
      const suffix = made.id.slice(made.id.indexOf('_') + 1)
      for (const id of [`pf_${suffix}`, `sess_${suffix}`]) {
        const asFlow = await readJson(await call(s, org, `/patient-flows/${id}`))
        expect({ id: asFlow.id, type: asFlow.resource_type, url: asFlow.url }).toEqual({ id: `pf_${suffix}`, type: 'patient_flow', url: made.url })
        const asSession = await readJson(await call(s, org, `/sessions/${id}`))
        expect({ id: asSession.id, type: asSession.resource_type }).toEqual({ id: `sess_${suffix}`, type: 'session' })
      }
    }
    await expectError(await call(s, org, '/sessions/sess_unknown'), 404, 'not_found_error', 'resource_not_found', 'id')
    const other = await createOrg(s, 'Other')
    await expectError(await call(s, other, `/sessions/${sess.id}`), 404, 'not_found_error', 'resource_not_found', 'id')
    await expectError(await call(s, org, `/sessions/${sess.id}`, { method: 'DELETE' }), 405, 'invalid_request_error', 'bad_request')
  })

  test('the status filter applies to both views', async () => {
    const org = await createOrg(s)
    const sess = await readJson(await flow(org, { patient_id: 's3' }, '/sessions'))
    await completeFlow(s.sql, sess.id)
    const pf = await readJson(await flow(org, { patient_id: 's3' }))
    const ids = async (path: string) => (await readJson(await call(s, org, path))).data.map((x: any) => x.id)
    expect(await ids('/patients/s3/patient-flows?status=complete')).toEqual([sess.id.replace(/^sess_/, 'pf_')])
    expect(await ids('/patients/s3/sessions?status=open')).toEqual([pf.id.replace(/^pf_/, 'sess_')])
  })
})

describe('GET /patient-flows/{id} and the lifecycle', () => {
  test('retrieve; unknown 404', async () => {
    const org = await createOrg(s)
    const f = await readJson(await flow(org, { patient_id: 'g' }))
    expect(await readJson(await call(s, org, `/patient-flows/${f.id}`))).toEqual(f)
    await expectError(await call(s, org, '/patient-flows/pf_unknown'), 404, 'not_found_error', 'resource_not_found', 'id')
  })

  test('an open flow past expires_at reads as expired, in GET and the status filter, before the job runs', async () => {
    const org = await createOrg(s)
    const f = await readJson(await flow(org, { patient_id: 'x1' }))
    const live = await readJson(await flow(org, { patient_id: 'x1' }))
    await s.sql`update patient_flow set expires_at = now() - interval '1 second' where id = ${f.id}`
    expect((await readJson(await call(s, org, `/patient-flows/${f.id}`))).status).toBe('expired')
    const [row] = await s.sql`select status from patient_flow where id = ${f.id}`
    expect(row.status).toBe('open')
    const ids = async (status: string) => (await readJson(await call(s, org, `/patients/x1/patient-flows?status=${status}`))).data.map((x: any) => x.id)
    expect(await ids('expired')).toEqual([f.id])
    expect(await ids('open')).toEqual([live.id])
    expect(await ids('complete')).toEqual([])
    await expectError(await call(s, org, '/patients/x1/patient-flows?status=done'), 400, 'invalid_request_error', 'invalid_data', 'status')
  })

  test('the expiry job marks past-due open flows expired; complete and expired are terminal', async () => {
    const org = await createOrg(s)
    const f = await readJson(await flow(org, { patient_id: 'x2' }))
    const done = await readJson(await flow(org, { patient_id: 'x2' }))
    await completeFlow(s.sql, done.id)
    expect((await readJson(await call(s, org, `/patient-flows/${done.id}`))).status).toBe('complete')
    await s.sql`update patient_flow set expires_at = now() - interval '1 second' where id in (${f.id}, ${done.id})`
    expect(await expireFlows(s.sql)).toBeGreaterThanOrEqual(1)
    const rows = await s.sql`select id, status from patient_flow where id in (${f.id}, ${done.id}) order by id = ${f.id}`
    expect(rows.map((r) => r.status)).toEqual(['complete', 'expired'])
    expect((await readJson(await call(s, org, `/patients/x2/patient-flows?status=complete`))).data.map((x: any) => x.id)).toEqual([done.id])
    await expect(completeFlow(s.sql, f.id)).rejects.toMatchObject({ category: 'conflict' })
    await expect(completeFlow(s.sql, done.id)).rejects.toMatchObject({ category: 'conflict' })
    expect(FlowExpiryJob.name).toBe('patient-flow-expiry')
  })

  test('the expiry job is scheduled on the queue', async () => {
    const { Queue } = await import('bullmq')
    const q = new Queue(FlowExpiryJob.name, { connection: { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' }, prefix: s.config.queuePrefix })
    const found = await q.getJobSchedulers()
    await q.close()
    expect(found.map((j) => j.key)).toContain(`${FlowExpiryJob.name}-every`)
    expect(found[0].every).toBe(60_000)
  })

  test("a flow's connections[] lists the connections it made, failed attempts with id null", async () => {
    const org = await createOrg(s)
    const src = await createSource(s)
    const f = await readJson(await flow(org, { patient_id: 'cx' }))
    await recordConnection(s.sql, { organizationId: org.id, patientId: 'cx', fhirSourceId: src.id, flowId: f.id, status: 'failed', failureCode: 'user_denied' })
    const ok = await recordConnection(s.sql, { organizationId: org.id, patientId: 'cx', fhirSourceId: src.id, flowId: f.id, status: 'active' })
    const got = await readJson(await call(s, org, `/patient-flows/${f.id}`))
    expect(got.connections).toEqual([
      { id: null, connection_id: src.id, status: 'failed', failure_code: 'user_denied', failure_at: expect.any(String), created_at: expect.any(String) },
      { id: ok.id, connection_id: src.id, status: 'active', failure_code: null, failure_at: null, created_at: expect.any(String) },
    ])
    const listed = await readJson(await call(s, org, '/patients/cx/patient-flows'))
    expect(listed.data[0].connections).toHaveLength(2)
    const patient = await readJson(await call(s, org, '/patients/cx'))
    expect(patient.connections.map((c: any) => c.session_id)).toEqual([f.id, f.id])
  })
})
