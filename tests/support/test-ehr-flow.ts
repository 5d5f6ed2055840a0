// Steps of the connect flow over HTTP, shared by the connect tests: an organization with the test EHR
// in its catalog, a flow, the Connect button, the EHR's answer, the callback, and waiting for a sync.
// The patient's browser is `browserFetch`: it keeps the cookies our pages set (the sign-in binding).
import { expect } from 'bun:test'
import { call, createOrg, createSource, type Org } from '../patients-client'
import type { TestServer } from '../harness'
import type { TestEhr } from './test-ehr'

export interface ConnectSetup {
  org: Org
  source: any
}

export async function setupConnect(s: TestServer, ehr: TestEhr, extra: Record<string, unknown> = {}): Promise<ConnectSetup> {
  const org = await createOrg(s)
  const source = await createSource(s, {
    name: 'Test EHR Health',
    fhir_base_url: ehr.fhirBase,
    client_id: ehr.clientId,
    client_secret: ehr.clientSecret,
    ...extra,
  })
  return { org, source }
}

export async function createFlow(s: TestServer, org: Org, body: Record<string, unknown>): Promise<any> {
  const res = await call(s, org, '/patient-flows', { method: 'POST', json: { return_url: 'https://app.example.com/back', ...body } })
  expect(res.status).toBe(200)
  return res.json() as any
}

const cookies = new Map<string, string>()

/** fetch() as the patient's browser: sends the cookies earlier answers set, keeps new ones; no redirect followed. */
export async function browserFetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  if (cookies.size) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '))
  const res = await fetch(url, { redirect: 'manual', ...init, headers })
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';')
    const i = pair.indexOf('=')
    cookies.set(pair.slice(0, i), pair.slice(i + 1))
  }
  return res
}

/** Presses Connect for `sourceId` on the flow's page: answers the authorize URL at the EHR. */
export async function pressConnect(flow: { url: string }, sourceId: string): Promise<URL> {
  const res = await browserFetch(`${flow.url}/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ source_id: sourceId }),
  })
  expect(res.status).toBe(303)
  return new URL(res.headers.get('location') as string)
}

/** Follows the EHR's authorize answer (approve or deny set on the EHR) back to our callback, in the patient's browser. */
export async function throughEhr(authorize: URL): Promise<Response> {
  const atEhr = await fetch(authorize, { redirect: 'manual' })
  expect(atEhr.status).toBe(302)
  return browserFetch(atEhr.headers.get('location') as string)
}

/** Presses Done on the flow's page. */
export function pressDone(flow: { url: string }): Promise<Response> {
  return browserFetch(`${flow.url}/done`, { method: 'POST' })
}

export async function flowConnections(s: TestServer, org: Org, flowId: string): Promise<any[]> {
  return ((await (await call(s, org, `/patient-flows/${flowId}`)).json()) as any).connections
}

export async function connectionState(s: TestServer, org: Org, patientId: string, connId: string): Promise<any> {
  const res = await call(s, org, `/patients/${patientId}/connections/${connId}`)
  expect(res.status).toBe(200)
  return res.json() as any
}

/** Polls until `check` returns a value (not undefined), at most `ms`. */
export async function waitFor<T>(check: () => Promise<T | undefined>, ms = 15_000, what = 'condition'): Promise<T> {
  const until = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v !== undefined) return v
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(100)
  }
}

/** Waits until the connection's sync has finished (succeeded after `after`, failed, or the connection
 *  left `active`). */
export function syncDone(s: TestServer, org: Org, patientId: string, connId: string, after: string | null = null): Promise<any> {
  return waitFor(
    async () => {
      const c = await connectionState(s, org, patientId, connId)
      if (c.status !== 'active' || c.sync.status === 'failed') return c
      return c.sync.status === 'succeeded' && c.sync.last_synced_at !== after ? c : undefined
    },
    20_000,
    'the sync',
  )
}
