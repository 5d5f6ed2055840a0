// No server-side request forgery (issue 19), over HTTP against the real app: webhook endpoints and
// catalog base URLs at internal addresses (any spelling) are refused at registration; a target that
// became internal after registration is refused at send time, recorded with its reason, and nothing
// reaches it (the events view shows no answer from it); without OUTBOUND_ALLOW the tests' local EHR is
// refused, with it the same calls go through. A hostile source: a `next` link to another origin gets
// neither the token nor a request, a paging loop and paging without end stop the sync with a clear
// error, and a pull is bounded in resources.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { adminFetch, call, createOrg, expectError, type Org } from './patients-client'
import { LOCAL_EHR, startTestEhr, type TestEhr } from './support/test-ehr'
import { connectionState, createFlow, flowConnections, pressConnect, pressDone, setupConnect, syncDone, throughEhr, waitFor } from './support/test-ehr-flow'
import { type Receiver, startReceiver } from './support/test-ehr-receiver'

// Without OUTBOUND_ALLOW (the default).
const closed = useTestServer({ CONNECT_RESYNC_INTERVAL_MS: '0', WEBHOOK_RETRY_DELAYS_MS: '0' })
// The tests' local EHR allowed; small sync bounds so that a hostile source reaches them fast.
const open = useTestServer({ ...LOCAL_EHR, CONNECT_RESYNC_INTERVAL_MS: '0', CONNECT_SYNC_MAX_PAGES: '12', CONNECT_SYNC_MAX_RESOURCES: '60' })
let ehr: TestEhr
let hooks: Receiver
let org: Org
/** The local EHR in the catalog of the server that allows it. */
let openSetup: Awaited<ReturnType<typeof setupConnect>>

beforeAll(async () => {
  ehr = await startTestEhr()
  ehr.decision = 'approve'
  hooks = startReceiver()
  org = await createOrg(closed)
  openSetup = await setupConnect(open, ehr)
})
afterAll(async () => {
  hooks?.stop()
  await ehr?.stop()
})

const INTERNAL = [
  ['https://169.254.169.254/latest/meta-data/', 'metadata'],
  ['https://10.0.0.1/', 'private'],
  ['https://[fd00:ec2::254]/', 'metadata'],
  ['https://2130706433/', 'loopback'],
  ['https://0x7f.1/', 'loopback'],
  ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped loopback'],
  ['https://[::ffff:a9fe:a9fe]/', 'IPv4-mapped metadata'],
  ['https://100.64.0.1/', 'CGNAT'],
  ['https://192.168.1.10/', 'private'],
  ['https://localhost/', 'loopback'],
] as const

describe('registration refuses internal targets', () => {
  test.each(INTERNAL)('POST /webhooks %s: 400 naming url (%s)', async (url, label) => {
    const err = await expectError(
      await call(closed, org, '/webhooks', { method: 'POST', json: { url, events: ['*'] } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'url',
    )
    expect(err.message).toContain(label)
  })

  test('plain http to loopback is refused too, and PATCH to an internal url', async () => {
    await expectError(
      await call(closed, org, '/webhooks', { method: 'POST', json: { url: hooks.url, events: ['*'] } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'url',
    )
    const made = await call(closed, org, '/webhooks', { method: 'POST', json: { url: 'https://hooks.example.com/in', events: ['*'] } })
    expect(made.status).toBe(200)
    const wh = (await made.json()) as any
    await expectError(
      await call(closed, org, `/webhooks/${wh.id}`, { method: 'PATCH', json: { url: 'https://169.254.169.254/' } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'url',
    )
    expect(((await (await call(closed, org, `/webhooks/${wh.id}`)).json()) as any).url).toBe('https://hooks.example.com/in')
    await call(closed, org, `/webhooks/${wh.id}`, { method: 'DELETE' })
  })

  test.each(INTERNAL)('POST /admin/fhir-sources %s: 400 naming fhir_base_url (%s)', async (url, label) => {
    const res = await adminFetch(closed, '/admin/fhir-sources', { method: 'POST', json: { name: 'Internal', fhir_base_url: `${url}fhir` } })
    const err = await expectError(res, 400, 'invalid_request_error', 'invalid_data', 'fhir_base_url')
    expect(err.message).toContain(label)
  })

  test('the local EHR is refused in the catalog without the allow-list, and PATCH cannot move a source there', async () => {
    await expectError(
      await adminFetch(closed, '/admin/fhir-sources', { method: 'POST', json: { name: 'Local', fhir_base_url: ehr.fhirBase } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'fhir_base_url',
    )
    const ok = await adminFetch(closed, '/admin/fhir-sources', { method: 'POST', json: { name: 'Public', fhir_base_url: 'https://ehr.example.org/fhir' } })
    const src = (await ok.json()) as any
    await expectError(
      await adminFetch(closed, `/admin/fhir-sources/${src.id}`, { method: 'PATCH', json: { fhir_base_url: 'http://10.1.2.3/fhir' } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'fhir_base_url',
    )
  })
})

describe('send time checks again (the address may have changed since registration)', () => {
  test('without the allow-list, Connect to the local EHR is refused: no request reaches it', async () => {
    // A catalog entry made before its address became internal (registration checks the address of then).
    const id = `fhirsrc_local${Date.now()}`
    await closed.sql`insert into fhir_source (id, name, fhir_base_url, client_id) values (${id}, 'Local EHR', ${ehr.fhirBase}, ${ehr.clientId})`
    const flow = await createFlow(closed, org, { patient_id: 'ssrf-connect' })
    const before = { ...ehr.counts, paths: ehr.paths.length }
    const res = await fetch(`${flow.url}/authorize`, { method: 'POST', body: new URLSearchParams({ source_id: id }), redirect: 'manual' })
    expect(res.status).toBe(502)
    expect(await res.text()).toContain('This provider is not available right now')
    expect(ehr.paths.length).toBe(before.paths)
    expect(ehr.counts.authorize).toBe(before.authorize)
  })

  test('the same Connect through a server with OUTBOUND_ALLOW=127.0.0.1 reaches the EHR', async () => {
    const flow = await createFlow(open, openSetup.org, { patient_id: 'ssrf-allowed' })
    const authorize = await pressConnect(flow, openSetup.source.id)
    expect(authorize.origin).toBe(ehr.origin)
  })

  test('a webhook endpoint that now points inside is not sent to: the attempt records why, the events view shows no answer', async () => {
    const id = `wh_internal${Date.now()}`
    await closed.sql`
      insert into webhook_endpoint (id, organization_id, url, events, api_version, secret)
      values (${id}, ${org.id}, ${hooks.url}, ${['*']}, '2026-04-25', ${closed.cipher.seal('whsec_test')})`
    const flow = await createFlow(closed, org, { patient_id: 'ssrf-hook' })
    expect((await pressDone(flow)).status).toBe(303)
    const ev = await waitFor(async () => {
      const list = ((await (await call(closed, org, `/webhooks/${id}/events`)).json()) as any).data
      return list[0]?.attempts >= 1 ? list[0] : undefined
    })
    expect(ev).toMatchObject({ attempts: 1, last_status_code: null, delivered_at: null })
    expect(ev.last_response_body).toStartWith('not sent: ')
    expect(ev.last_response_body).toContain('loopback')
    expect(hooks.deliveries).toHaveLength(0)
    const [attempt] = await closed.sql<{ status_code: number | null; response: string | null; error: string }[]>`
      select d.status_code, d.response, d.error from webhook_delivery d join webhook_event e on e.id = d.event_id where e.webhook_endpoint_id = ${id}`
    expect(attempt).toMatchObject({ status_code: null, response: null })
    expect(attempt.error).toContain('OUTBOUND_ALLOW')
  })
})

describe('a hostile source', () => {
  let conn: any
  const patientId = 'hostile-source'
  let collector: ReturnType<typeof Bun.serve>
  const collected: { path: string; authorization: string | null }[] = []

  beforeAll(async () => {
    collector = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch(req) {
        collected.push({ path: new URL(req.url).pathname, authorization: req.headers.get('authorization') })
        return Response.json({ resourceType: 'Bundle', type: 'searchset', entry: [] })
      },
    })
    ehr.advertiseEverything = true
  })
  afterAll(() => {
    ehr.intercept = undefined
    ehr.advertiseEverything = false
    collector?.stop(true)
  })

  const bundle = (entries: any[], next?: string) => ({
    resourceType: 'Bundle',
    type: 'searchset',
    entry: entries.map((resource) => ({ resource })),
    link: next ? [{ relation: 'next', url: next }] : [],
  })
  const setup = {
    get org() {
      return openSetup.org
    },
    get source() {
      return openSetup.source
    },
  }
  const resync = async () => {
    const before = (await connectionState(open, setup.org, patientId, conn.id)).sync.started_at
    expect((await call(open, setup.org, `/patients/${patientId}/connections/${conn.id}/sync`, { method: 'POST' })).status).toBe(202)
    return waitFor(async () => {
      const c = await connectionState(open, setup.org, patientId, conn.id)
      return c.sync.started_at !== before && (c.sync.status === 'failed' || c.sync.status === 'succeeded') ? c : undefined
    })
  }

  test('more resources than CONNECT_SYNC_MAX_RESOURCES end the pull with a clear error', async () => {
    const flow = await createFlow(open, setup.org, { patient_id: patientId })
    await throughEhr(await pressConnect(flow, setup.source.id))
    conn = (await flowConnections(open, setup.org, flow.id))[0]
    expect(conn.status).toBe('active')
    const done = await syncDone(open, setup.org, patientId, conn.id)
    expect(done.sync.status).toBe('failed')
    expect(done.sync.error).toContain('more than 60 resources for this patient (CONNECT_SYNC_MAX_RESOURCES)')
  })

  test('a next link to another origin: refused, nothing is sent there, the token stays with the source', async () => {
    const elsewhere = `http://127.0.0.1:${collector.port}/steal?page=2`
    ehr.intercept = (path) => (path.includes('$everything') ? Response.json(bundle([{ resourceType: 'Patient', id: ehr.patientId }], elsewhere)) : undefined)
    const done = await resync()
    expect(done.sync.status).toBe('failed')
    expect(done.sync.error).toContain(`linked to http://127.0.0.1:${collector.port}, another origin`)
    expect(collected).toEqual([])
  })

  test('a next link already requested (a loop) ends the sync at once', async () => {
    const from = ehr.paths.length
    ehr.intercept = (path) => {
      if (!path.includes('$everything')) return undefined
      const page = Number(new URLSearchParams(path.split('?')[1]).get('page') ?? 1)
      // The first page -> page 2 -> the first page again.
      const first = `${ehr.fhirBase}/Patient/${ehr.patientId}/$everything?_count=200`
      const next = page === 1 ? `${first}&page=2` : first
      return Response.json(bundle([{ resourceType: 'Observation', id: `o${page}`, status: 'final', code: { text: 'x' } }], next))
    }
    const done = await resync()
    expect(done.sync.status).toBe('failed')
    expect(done.sync.error).toContain('was already requested in this sync (a paging loop)')
    expect(ehr.paths.slice(from).filter((p) => p.includes('$everything'))).toHaveLength(2)
  })

  test('paging without end stops after CONNECT_SYNC_MAX_PAGES requests', async () => {
    const from = ehr.paths.length
    ehr.intercept = (path) => {
      if (!path.includes('$everything')) return undefined
      const page = Number(new URLSearchParams(path.split('?')[1]).get('page') ?? 1)
      return Response.json(bundle([], `${ehr.fhirBase}/Patient/${ehr.patientId}/$everything?_count=200&page=${page + 1}`))
    }
    const done = await resync()
    expect(done.sync.status).toBe('failed')
    expect(done.sync.error).toContain('stopped after 12 requests (CONNECT_SYNC_MAX_PAGES)')
    expect(ehr.paths.length - from).toBe(12)
  })

  test('a source that behaves again syncs (the bounds do not stick)', async () => {
    ehr.intercept = (path) =>
      path.includes('$everything') ? Response.json(bundle([{ resourceType: 'Patient', id: ehr.patientId, name: [{ family: 'Atencio' }] }])) : undefined
    const done = await resync()
    expect(done.sync).toMatchObject({ status: 'succeeded', error: null, total: 1 })
  })
})
