// The SMART side of the connect flow against the test EHR: the consent page, denial, a bad or replayed
// state, a failed token exchange, an expired flow, direct mode (success and failure), discovery through
// the CapabilityStatement with a public client, token refresh, and refresh failure with its event.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { verifySignature } from '../shared/webhooks/signature'
import { adminFetch, call, createSource } from './patients-client'
import { useTestServer } from './harness'
import { LOCAL_EHR, startTestEhr, type TestEhr } from './support/test-ehr'
import {
  browserFetch,
  type ConnectSetup,
  connectionState,
  createFlow,
  flowConnections,
  pressConnect,
  pressDone,
  setupConnect,
  syncDone,
  throughEhr,
  waitFor,
} from './support/test-ehr-flow'
import { type Receiver, startReceiver } from './support/test-ehr-receiver'

const s = useTestServer({ ...LOCAL_EHR, CONNECT_RESYNC_INTERVAL_MS: '0', WEBHOOK_RETRY_DELAYS_MS: '0,100', TOKEN_ENCRYPTION_KEY: 'ab'.repeat(32) })
let ehr: TestEhr
let setup: ConnectSetup
let hooks: Receiver

beforeAll(async () => {
  ehr = await startTestEhr()
  setup = await setupConnect(s, ehr)
  hooks = startReceiver()
  const res = await call(s, setup.org, '/webhooks', { method: 'POST', json: { url: hooks.url, events: ['*'] } })
  expect(res.status).toBe(200)
  hooks.status = 200
  ;(globalThis as any).whsec = ((await res.json()) as any).secret
})
afterAll(async () => {
  hooks?.stop()
  await ehr?.stop()
})

describe('picker mode outcomes', () => {
  test('the consent page: Deny records a failed connection with failure_code user_denied', async () => {
    ehr.decision = 'page'
    const flow = await createFlow(s, setup.org, { patient_id: 'p-deny' })
    const authorize = await pressConnect(flow, setup.source.id)
    const consent = await fetch(authorize)
    const html = await consent.text()
    expect(html).toContain('value="approve">Approve</button>')
    const request = /name="request" value="([^"]+)"/.exec(html)?.[1] as string
    const denied = await fetch(`${ehr.origin}/authorize/decision`, {
      method: 'POST',
      body: new URLSearchParams({ request, decision: 'deny' }),
      redirect: 'manual',
    })
    const back = await browserFetch(denied.headers.get('location') as string)
    expect(back.status).toBe(303)
    expect(back.headers.get('location')).toBe(`${flow.url}?result=denied`)
    const page = await (await fetch(back.headers.get('location') as string)).text()
    expect(page).toContain('You declined to share your records')
    expect(page).toContain('Not connected: you declined')
    const [c] = await flowConnections(s, setup.org, flow.id)
    expect(c).toMatchObject({ id: null, connection_id: setup.source.id, status: 'failed', failure_code: 'user_denied' })
    expect(c.failure_at).toBeString()
    const [row] = await s.sql<any[]>`select access_token from connection where flow_id = ${flow.id}`
    expect(row.access_token).toBeNull()
  })

  test('an unknown or missing state is refused with a page, and nothing is recorded', async () => {
    const res = await fetch(`${s.base}/connect/callback?state=forged&code=abc`, { redirect: 'manual' })
    expect(res.status).toBe(400)
    expect(await res.text()).toContain('This sign-in has expired')
    expect((await fetch(`${s.base}/connect/callback`, { redirect: 'manual' })).status).toBe(400)
  })

  test('a callback with neither code nor error is oauth_callback_failed; a rejected code is token_exchange_failed', async () => {
    const flow = await createFlow(s, setup.org, { patient_id: 'p-fail' })
    const a = await pressConnect(flow, setup.source.id)
    const res = await browserFetch(`${s.base}/connect/callback?state=${a.searchParams.get('state')}`)
    expect(res.headers.get('location')).toBe(`${flow.url}?result=failed`)
    const b = await pressConnect(flow, setup.source.id)
    const bad = await browserFetch(`${s.base}/connect/callback?state=${b.searchParams.get('state')}&code=not-a-code`)
    expect(bad.headers.get('location')).toBe(`${flow.url}?result=failed`)
    const conns = await flowConnections(s, setup.org, flow.id)
    expect(conns.map((c) => c.failure_code)).toEqual(['oauth_callback_failed', 'token_exchange_failed'])
  })

  test('an expired flow shows a clear page and cannot connect', async () => {
    const flow = await createFlow(s, setup.org, { patient_id: 'p-expired', expires_in: 60 })
    await s.sql`update patient_flow set expires_at = now() - interval '1 second' where id = ${flow.id}`
    const res = await fetch(flow.url)
    expect(res.status).toBe(410)
    expect(await res.text()).toContain('This link has expired')
    const connect = await fetch(`${flow.url}/authorize`, {
      method: 'POST',
      body: new URLSearchParams({ source_id: setup.source.id }),
      redirect: 'manual',
    })
    expect(connect.status).toBe(410)
    expect((await pressDone(flow)).status).toBe(410)
    expect((await fetch(`${s.base}/connect/pf_unknown`)).status).toBe(404)
  })
})

describe('direct mode', () => {
  test('the page redirects to the source at once; success returns with success=true and connection_id', async () => {
    ehr.decision = 'approve'
    const flow = await createFlow(s, setup.org, { patient_id: 'p-direct', connection_id: setup.source.id })
    const res = await browserFetch(flow.url)
    expect(res.status).toBe(302)
    const authorize = new URL(res.headers.get('location') as string)
    expect(authorize.origin).toBe(ehr.origin)
    const back = await throughEhr(authorize)
    expect(back.status).toBe(303)
    const ret = new URL(back.headers.get('location') as string)
    expect(Object.fromEntries(ret.searchParams)).toEqual({ patient_id: 'p-direct', patient_flow_id: flow.id, success: 'true', connection_id: setup.source.id })
    expect(((await (await call(s, setup.org, `/patient-flows/${flow.id}`)).json()) as any).status).toBe('complete')
    const completed = await waitFor(async () => hooks.ofType('patient_flow.completed').find((d) => d.event.data.object.id === flow.id))
    expect(completed.event.data.object.connections[0].status).toBe('active')
  })

  test('denial returns with success=false and error=user_denied', async () => {
    ehr.decision = 'deny'
    const flow = await createFlow(s, setup.org, { patient_id: 'p-direct-deny', connection_id: setup.source.id })
    const res = await browserFetch(flow.url)
    const back = await throughEhr(new URL(res.headers.get('location') as string))
    const ret = new URL(back.headers.get('location') as string)
    expect(Object.fromEntries(ret.searchParams)).toEqual({ patient_id: 'p-direct-deny', patient_flow_id: flow.id, success: 'false', error: 'user_denied' })
  })
})

describe('a source that cannot be reached', () => {
  test('direct mode: back to return_url with success=false and error=source_unavailable; the flow completes with the failed attempt', async () => {
    const down = await createSource(s, { fhir_base_url: 'http://127.0.0.1:1/fhir', client_id: 'x' })
    const noClient = await createSource(s)
    for (const [i, source] of [down, noClient].entries()) {
      const flow = await createFlow(s, setup.org, { patient_id: `p-down-${i}`, connection_id: source.id })
      const res = await browserFetch(flow.url)
      expect(res.status).toBe(302)
      const ret = new URL(res.headers.get('location') as string)
      expect(`${ret.origin}${ret.pathname}`).toBe('https://app.example.com/back')
      expect(Object.fromEntries(ret.searchParams)).toEqual({
        patient_id: `p-down-${i}`,
        patient_flow_id: flow.id,
        success: 'false',
        error: 'source_unavailable',
      })
      const after = (await (await call(s, setup.org, `/patient-flows/${flow.id}`)).json()) as any
      expect(after.status).toBe('complete')
      expect(after.connections).toEqual([
        {
          id: null,
          connection_id: source.id,
          status: 'failed',
          failure_code: 'source_unavailable',
          failure_at: expect.any(String),
          created_at: expect.any(String),
        },
      ])
      // The page is over: opening it again offers the way back, not a dead end.
      const again = await (await fetch(flow.url)).text()
      expect(again).toContain(`href="https://app.example.com/back?patient_id=p-down-${i}&#38;patient_flow_id=${flow.id}">Done</a>`)
    }
  })

  test('picker mode: the error page offers the picker and the return button', async () => {
    const down = await createSource(s, { fhir_base_url: 'http://127.0.0.1:1/picker/fhir', client_id: 'x' })
    const flow = await createFlow(s, setup.org, { patient_id: 'p-down-picker', return_button_label: 'Back to Acme' })
    const res = await browserFetch(`${flow.url}/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ source_id: down.id }),
    })
    expect(res.status).toBe(502)
    const html = await res.text()
    expect(html).toContain(`<a href="${flow.url}">Pick another provider</a>`)
    expect(html).toContain(`<form class="done" method="post" action="${flow.url}/done"><button type="submit">Back to Acme</button></form>`)
    const none = await browserFetch(`${flow.url}/authorize`, { method: 'POST', body: new URLSearchParams({}) })
    expect(none.status).toBe(400)
    expect(await none.text()).toContain(`action="${flow.url}/done"`)
    // The return button from the error page completes the flow and returns.
    const back = await pressDone(flow)
    expect(back.status).toBe(303)
    expect(new URL(back.headers.get('location') as string).searchParams.get('patient_flow_id')).toBe(flow.id)
  })
})

describe('tokens', () => {
  let conn: any
  const patientId = 'p-tokens'

  test('discovery falls back to the CapabilityStatement; a public client exchanges with client_id only', async () => {
    ehr.decision = 'approve'
    ehr.wellKnown = false
    ehr.clientSecret = null
    await adminFetch(s, `/admin/fhir-sources/${setup.source.id}`, { method: 'PATCH', json: { client_secret: null } })
    try {
      const flow = await createFlow(s, setup.org, { patient_id: patientId })
      const before = ehr.counts.codeGrants
      const back = await throughEhr(await pressConnect(flow, setup.source.id))
      expect(back.headers.get('location')).toBe(`${flow.url}?result=connected`)
      expect(ehr.counts.codeGrants).toBe(before + 1)
      conn = (await flowConnections(s, setup.org, flow.id))[0]
      expect(conn.status).toBe('active')
      expect((await syncDone(s, setup.org, patientId, conn.id)).sync.status).toBe('succeeded')
    } finally {
      ehr.wellKnown = true
    }
  })

  test('a source that lists Patient/$everything is pulled through it, with the same records', async () => {
    ehr.advertiseEverything = true
    try {
      const flow = await createFlow(s, setup.org, { patient_id: 'p-everything' })
      await throughEhr(await pressConnect(flow, setup.source.id))
      const c = (await flowConnections(s, setup.org, flow.id))[0]
      const from = ehr.paths.length
      const done = await syncDone(s, setup.org, 'p-everything', c.id)
      expect(done.sync.status).toBe('succeeded')
      const paths = ehr.paths.slice(from)
      expect(paths.some((p) => p.startsWith(`/Patient/${ehr.patientId}/$everything`))).toBe(true)
      expect(paths.some((p) => p.startsWith(`/Patient/${ehr.patientId}/Observation`))).toBe(false)
      const viaCompartment = await connectionState(s, setup.org, patientId, conn.id)
      expect(done.sync.total).toBe(viaCompartment.sync.total)
    } finally {
      ehr.advertiseEverything = false
    }
  })

  test('an expired access token is refreshed and the rotated refresh token kept (encrypted)', async () => {
    const [before] = await s.sql<any[]>`select refresh_token, last_synced_at from connection where id = ${conn.id}`
    ehr.expireAccessTokens()
    const refreshes = ehr.counts.refreshGrants
    const rejected = ehr.counts.rejected
    const res = await call(s, setup.org, `/patients/${patientId}/connections/${conn.id}/sync`, { method: 'POST' })
    expect(res.status).toBe(202)
    const done = await syncDone(s, setup.org, patientId, conn.id, before.last_synced_at.toISOString())
    expect(done.status).toBe('active')
    expect(done.sync.status).toBe('succeeded')
    expect(ehr.counts.refreshGrants).toBe(refreshes + 1)
    expect(ehr.counts.rejected).toBe(rejected + 1)
    const [after] = await s.sql<any[]>`select refresh_token from connection where id = ${conn.id}`
    expect(after.refresh_token).toMatch(/^v2\./)
    expect(after.refresh_token).not.toBe(before.refresh_token)
    // The new refresh token works: another forced expiry refreshes again.
    ehr.expireAccessTokens()
    await call(s, setup.org, `/patients/${patientId}/connections/${conn.id}/sync`, { method: 'POST' })
    const again = await syncDone(s, setup.org, patientId, conn.id, done.sync.last_synced_at)
    expect(again.sync.status).toBe('succeeded')
    expect(ehr.counts.refreshGrants).toBe(refreshes + 2)
  })

  test('a source that fails makes the sync fail: the error is on the connection and records.sync.failed is sent', async () => {
    ehr.failFhir = true
    try {
      await call(s, setup.org, `/patients/${patientId}/connections/${conn.id}/sync`, { method: 'POST' })
      const done = await syncDone(s, setup.org, patientId, conn.id)
      expect(done.status).toBe('active')
      expect(done.sync.status).toBe('failed')
      expect(done.sync.error).toContain('503')
      const ev = await waitFor(async () => hooks.ofType('records.sync.failed').find((d) => d.event.data.object.id === conn.id))
      expect(ev.event.data.object).toMatchObject({ patient_id: patientId, connection_id: setup.source.id })
      expect(ev.event.data.object.error_message).toContain('503')
    } finally {
      ehr.failFhir = false
    }
  })

  test('a refresh that fails sets refresh_failed and emits connection.token_refresh_failed, signed', async () => {
    ehr.expireAccessTokens()
    ehr.revokeRefreshTokens()
    await call(s, setup.org, `/patients/${patientId}/connections/${conn.id}/sync`, { method: 'POST' })
    const done = await syncDone(s, setup.org, patientId, conn.id)
    expect(done.status).toBe('refresh_failed')
    expect(done.sync.error).toContain('token refresh failed')
    const ev = await waitFor(async () => hooks.ofType('connection.token_refresh_failed')[0])
    expect(ev.event.data.object).toMatchObject({ id: conn.id, resource_type: 'connection', status: 'refresh_failed', connection_id: setup.source.id })
    expect(verifySignature((globalThis as any).whsec, ev.signature, ev.body)).toBe(true)
    // An inactive connection does not sync.
    expect((await call(s, setup.org, `/patients/${patientId}/connections/${conn.id}/sync`, { method: 'POST' })).status).toBe(409)
    const sync = await waitFor(async () => hooks.ofType('records.sync.completed').find((d) => d.event.data.object.id === conn.id))
    expect(sync.event.data.object).toMatchObject({ patient_id: patientId, connection_id: setup.source.id, errors: 0 })
    expect(sync.event.data.object.total).toBeGreaterThan(50)
    const { created, updated, deleted, unchanged } = sync.event.data.object.changes
    expect(deleted).toBe(0)
    expect(created + updated + unchanged).toBe(sync.event.data.object.total)
  })
})
