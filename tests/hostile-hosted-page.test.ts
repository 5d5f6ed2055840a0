// The hosted page (issue 19), over HTTP against the real app: its URL carries its own token, and every
// step (page, Connect, Done) refuses a flow id without it, with a wrong token or another flow's; the
// SMART callback is accepted only in the browser that pressed Connect; every page and redirect carries
// CSP (frame-ancestors 'none'), X-Frame-Options, Referrer-Policy and Cache-Control: no-store; the flow
// `url`, the redirect_uri and every link a patient follows come from the configured base URL, and a
// forged Host header changes none of them.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { call, createOrg } from './patients-client'
import { LOCAL_EHR, startTestEhr, type TestEhr } from './support/test-ehr'
import { browserFetch, type ConnectSetup, createFlow, flowConnections, pressConnect, pressDone, setupConnect, throughEhr } from './support/test-ehr-flow'

const s = useTestServer({ ...LOCAL_EHR, CONNECT_RESYNC_INTERVAL_MS: '0' })
const PUBLIC = 'https://connect.example.com/base'
const published = useTestServer({ ...LOCAL_EHR, CONNECT_RESYNC_INTERVAL_MS: '0', PUBLIC_BASE_URL: PUBLIC })
let ehr: TestEhr
let setup: ConnectSetup

beforeAll(async () => {
  ehr = await startTestEhr()
  ehr.decision = 'approve'
  setup = await setupConnect(s, ehr)
})
afterAll(async () => {
  await ehr?.stop()
})

const FORGED = { host: 'evil.example:666', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }
const tokenOf = (url: string) => url.split('/').at(-1) as string

function expectPageHeaders(res: Response) {
  const csp = res.headers.get('content-security-policy') ?? ''
  expect(csp).toContain("frame-ancestors 'none'")
  expect(csp).toContain("default-src 'none'")
  expect(res.headers.get('x-frame-options')).toBe('DENY')
  expect(res.headers.get('referrer-policy')).toBe('no-referrer')
  expect(res.headers.get('cache-control')).toBe('no-store')
}

describe('the page token', () => {
  test('the flow url carries a token of 32 characters; the flow id alone opens nothing', async () => {
    const flow = await createFlow(s, setup.org, { patient_id: 'tok-1' })
    expect(flow.url).toMatch(new RegExp(`^${s.base}/connect/${flow.id}/[A-Za-z0-9_-]{32}$`))
    expect((await fetch(flow.url)).status).toBe(200)
    // GET reads the same url every time (nothing to lose: it is recomputed, not stored).
    expect(((await (await call(s, setup.org, `/patient-flows/${flow.id}`)).json()) as any).url).toBe(flow.url)
    const [row] = await s.sql<any[]>`select to_jsonb(f)::text as t from patient_flow f where id = ${flow.id}`
    expect(row.t).not.toContain(tokenOf(flow.url))

    for (const path of [`/connect/${flow.id}`, `/connect/${flow.id}/${'A'.repeat(32)}`, `/connect/${flow.id}/${tokenOf(flow.url).slice(0, 31)}x`]) {
      const res = await fetch(`${s.base}${path}`)
      expect({ path, status: res.status }).toEqual({ path, status: 404 })
      expect(await res.text()).toContain('Link not found')
    }
  })

  test("another flow's token does not open this flow", async () => {
    const a = await createFlow(s, setup.org, { patient_id: 'tok-a' })
    const b = await createFlow(s, setup.org, { patient_id: 'tok-b' })
    expect((await fetch(`${s.base}/connect/${b.id}/${tokenOf(a.url)}`)).status).toBe(404)
  })

  test('Connect and Done need the token: without it nothing happens to the flow and the EHR hears nothing', async () => {
    const flow = await createFlow(s, setup.org, { patient_id: 'tok-steps' })
    const wrong = `${s.base}/connect/${flow.id}/${'B'.repeat(32)}`
    const before = ehr.paths.length + ehr.counts.authorize
    const form = { method: 'POST', body: new URLSearchParams({ source_id: setup.source.id }), redirect: 'manual' as const }
    for (const url of [`${wrong}/authorize`, `${s.base}/connect/${flow.id}/authorize`, `${wrong}/done`, `${s.base}/connect/${flow.id}/done`]) {
      const res = await fetch(url, form)
      expect({ url, status: res.status }).toEqual({ url, status: 404 })
    }
    expect(ehr.paths.length + ehr.counts.authorize).toBe(before)
    const got = (await (await call(s, setup.org, `/patient-flows/${flow.id}`)).json()) as any
    expect(got).toMatchObject({ status: 'open', connections: [] })
    expect((await pressDone(flow)).status).toBe(303) // with the token, Done works
  })
})

describe('the callback comes back to the browser that pressed Connect', () => {
  test('the same state from another browser is refused and records nothing; the page token does not leak', async () => {
    const flow = await createFlow(s, setup.org, { patient_id: 'bind-1' })
    const authorize = await pressConnect(flow, setup.source.id)
    const atEhr = await fetch(authorize, { redirect: 'manual' })
    const callback = atEhr.headers.get('location') as string
    const stranger = await fetch(callback, { redirect: 'manual' }) // no cookie: another browser, or the EHR itself
    expect(stranger.status).toBe(400)
    expect(stranger.headers.get('location')).toBeNull()
    expect(await stranger.text()).toContain('started in another browser')
    expectPageHeaders(stranger)
    expect(await flowConnections(s, setup.org, flow.id)).toEqual([])
    const wrongCookie = await fetch(callback, { redirect: 'manual', headers: { cookie: `connect_binding=${'x'.repeat(32)}` } })
    expect(wrongCookie.status).toBe(400)
    // The patient's own browser completes it.
    const own = await browserFetch(callback)
    expect(own.status).toBe(303)
    expect(own.headers.get('location')).toBe(`${flow.url}?result=connected`)
  })

  test('the binding cookie is HttpOnly, SameSite=Lax, scoped to the pages; Secure on an https base', async () => {
    const flow = await createFlow(s, setup.org, { patient_id: 'bind-2' })
    const res = await fetch(`${flow.url}/authorize`, { method: 'POST', body: new URLSearchParams({ source_id: setup.source.id }), redirect: 'manual' })
    const cookie = res.headers.get('set-cookie') as string
    expect(cookie).toMatch(/^connect_binding=[A-Za-z0-9_-]{32}; Path=\/connect; Max-Age=86400; HttpOnly; SameSite=Lax$/)
    const org = await createOrg(published)
    const src = (await setupConnect(published, ehr, { name: 'Published EHR' })).source
    const pf = await createFlow(published, org, { patient_id: 'bind-3', connection_id: src.id })
    const direct = await fetch(`${published.base}${new URL(pf.url).pathname.replace('/base', '')}`, { redirect: 'manual' })
    expect(direct.status).toBe(302)
    expect(direct.headers.get('set-cookie')).toMatch(/; Path=\/base\/connect; .*; Secure$/)
  })
})

describe('headers on every hosted page and redirect', () => {
  test('picker, not found, expired, completed, Connect, callback, Done, direct mode', async () => {
    const flow = await createFlow(s, setup.org, { patient_id: 'hdr-1' })
    expectPageHeaders(await fetch(flow.url))
    expectPageHeaders(await fetch(`${s.base}/connect/${flow.id}`))
    expectPageHeaders(await fetch(`${s.base}/connect/pf_nope/${'C'.repeat(32)}`))
    const authorize = await browserFetch(`${flow.url}/authorize`, { method: 'POST', body: new URLSearchParams({ source_id: setup.source.id }) })
    expect(authorize.status).toBe(303)
    expectPageHeaders(authorize)
    const back = await throughEhr(new URL(authorize.headers.get('location') as string))
    expect(back.status).toBe(303)
    expectPageHeaders(back)
    const done = await pressDone(flow)
    expect(done.status).toBe(303)
    expectPageHeaders(done)
    const completed = await fetch(flow.url)
    expect(await completed.text()).toContain('You are all set')
    expectPageHeaders(completed)

    const expired = await createFlow(s, setup.org, { patient_id: 'hdr-2', expires_in: 60 })
    await s.sql`update patient_flow set expires_at = now() - interval '1 second' where id = ${expired.id}`
    const gone = await fetch(expired.url)
    expect(gone.status).toBe(410)
    expectPageHeaders(gone)

    const direct = await createFlow(s, setup.org, { patient_id: 'hdr-3', connection_id: setup.source.id })
    const redirect = await browserFetch(direct.url)
    expect(redirect.status).toBe(302)
    expectPageHeaders(redirect)
  })
})

describe('links come from the configured base, never from the Host header', () => {
  test('without PUBLIC_BASE_URL: the server’s own host and port, whatever Host says', async () => {
    const res = await call(s, setup.org, '/patient-flows', {
      method: 'POST',
      json: { patient_id: 'host-1', return_url: 'https://app.example.com/back', connection_id: setup.source.id },
      headers: FORGED,
    })
    const flow = (await res.json()) as any
    expect(flow.url).toStartWith(`${s.base}/connect/${flow.id}/`)
    const listed = (await (await call(s, setup.org, '/patients/host-1/patient-flows', { headers: FORGED })).json()) as any
    expect(listed.data[0].url).toBe(flow.url)
    // Direct mode: the redirect_uri sent to the EHR.
    const page = await browserFetch(flow.url, { headers: FORGED })
    const authorize = new URL(page.headers.get('location') as string)
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${s.base}/connect/callback`)
    // Picker mode: the callback's redirect back to the page.
    const picker = await createFlow(s, setup.org, { patient_id: 'host-2' })
    const a = await pressConnect(picker, setup.source.id)
    expect(a.searchParams.get('redirect_uri')).toBe(`${s.base}/connect/callback`)
    const atEhr = await fetch(a, { redirect: 'manual' })
    const back = await browserFetch(atEhr.headers.get('location') as string, { headers: FORGED })
    expect(back.headers.get('location')).toBe(`${picker.url}?result=connected`)
  })

  test('with PUBLIC_BASE_URL: that base, whatever Host says, also in the page’s forms', async () => {
    const org = await createOrg(published, 'Published')
    const res = await call(published, org, '/patient-flows', {
      method: 'POST',
      json: { patient_id: 'pub-1', return_url: 'https://app.example.com/back' },
      headers: FORGED,
    })
    const flow = (await res.json()) as any
    expect(flow.url).toMatch(new RegExp(`^${PUBLIC}/connect/${flow.id}/[A-Za-z0-9_-]{32}$`))
    const path = new URL(flow.url).pathname.slice('/base'.length) // behind the proxy that strips /base
    const html = await (await fetch(`${published.base}${path}`, { headers: FORGED })).text()
    expect(html).toContain(`action="${flow.url}/done"`)
    expect(html).toContain(`action="${flow.url}" role="search"`)
    expect(html).not.toContain('evil.example')
  })
})
