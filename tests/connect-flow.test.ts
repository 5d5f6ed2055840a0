// The connect flow end to end over real HTTP: a flow, its hosted page, Connect, SMART authorization
// at the test EHR (PKCE, state, aud), the callback, the background pull into our FHIR store under our
// ids, the Done button back to return_url; then periodic re-sync without duplicates, a change at the
// source propagated, a resource deleted at the source deleted here, and disconnect removing the
// source's records.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { patientIdSystem } from '../shared/patients/identifier'
import { useTestServer } from './harness'
import { call } from './patients-client'
import { LOCAL_EHR, startTestEhr, type TestEhr } from './support/test-ehr'
import {
  browserFetch,
  type ConnectSetup,
  createFlow,
  flowConnections,
  pressConnect,
  pressDone,
  setupConnect,
  syncDone,
  throughEhr,
} from './support/test-ehr-flow'

const s = useTestServer({ ...LOCAL_EHR, CONNECT_RESYNC_INTERVAL_MS: '1500' })
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

/** A resource without its identity: ids, meta and reference targets removed (types kept). */
function fingerprint(r: any): string {
  const strip = (v: any): any => {
    if (Array.isArray(v)) return v.map(strip)
    if (v && typeof v === 'object') {
      const out: any = {}
      for (const k of Object.keys(v).sort()) {
        if (k === 'id' || k === 'meta') continue
        out[k] = k === 'reference' && typeof v[k] === 'string' ? v[k].replace(/^.*?([A-Z][A-Za-z]+)\/[^/]+$/, '$1') : strip(v[k])
      }
      return out
    }
    return v
  }
  const { identifier, ...rest } = r
  // The linked Patient gains the organization's identifier; compare the others.
  const ids = (identifier ?? []).filter((i: any) => !String(i.system).startsWith('https://patient-connection.local/'))
  return JSON.stringify(strip(ids.length ? { ...rest, identifier: ids } : rest))
}

async function compartment(fetchJson: (path: string) => Promise<any>, patientId: string): Promise<string[]> {
  const types = new Set<string>()
  const out: string[] = [fingerprint(await fetchJson(`/Patient/${patientId}`))]
  // The types present at the source: every resource that references the patient.
  for (const t of [
    'AllergyIntolerance',
    'CarePlan',
    'CareTeam',
    'Claim',
    'Condition',
    'DiagnosticReport',
    'Encounter',
    'ExplanationOfBenefit',
    'Goal',
    'Immunization',
    'MedicationRequest',
    'Observation',
    'Procedure',
  ])
    types.add(t)
  for (const t of types) {
    const b = await fetchJson(`/Patient/${patientId}/${t}?_count=200`)
    for (const e of b.entry ?? []) out.push(fingerprint(e.resource))
  }
  return out.sort()
}

describe('picker mode, end to end', () => {
  let flow: any
  let conn: any
  const patientId = 'user_42'

  test('the hosted page lists the recommended source first and the Done button with return_button_label', async () => {
    flow = await createFlow(s, setup.org, { patient_id: patientId, return_button_label: 'Acme Health', recommended_connection_ids: [setup.source.id] })
    expect(flow.url).toMatch(new RegExp(`^${s.base}/connect/${flow.id}/[A-Za-z0-9_-]{32}$`))
    const res = await fetch(flow.url)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/html')
    const html = await res.text()
    expect(html).toContain('<meta name="viewport"')
    expect(html.indexOf('Recommended')).toBeLessThan(html.indexOf('Test EHR Health'))
    expect(html).toContain(`name="source_id" value="${setup.source.id}"`)
    // The return button shows return_button_label as its whole text.
    expect(html).toMatch(/<form class="done"[^>]*>\s*<button type="submit">Acme Health<\/button>/)
    expect(html).not.toContain('Done — return to')
    // The search over the catalog narrows the list without JavaScript (a GET form).
    expect(await (await fetch(`${flow.url}?q=nothing-like-this`)).text()).not.toContain('Test EHR Health</span>')
    expect(await (await fetch(`${flow.url}?q=test%20ehr`)).text()).toContain('Test EHR Health</span>')
  })

  test('Connect redirects to the EHR with PKCE S256, state, aud and the SMART scopes', async () => {
    const authorize = await pressConnect(flow, setup.source.id)
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${ehr.origin}/authorize`)
    const q = authorize.searchParams
    expect(q.get('response_type')).toBe('code')
    expect(q.get('client_id')).toBe(ehr.clientId)
    expect(q.get('redirect_uri')).toBe(`${s.base}/connect/callback`)
    expect(q.get('aud')).toBe(ehr.fhirBase)
    expect(q.get('scope')).toBe('launch/patient openid fhirUser offline_access patient/*.read')
    expect(q.get('code_challenge_method')).toBe('S256')
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(q.get('state')!.length).toBeGreaterThanOrEqual(32)

    const back = await throughEhr(authorize)
    expect(back.status).toBe(303)
    expect(back.headers.get('location')).toBe(`${flow.url}?result=connected`)
    // The state is single-use: replaying the callback is refused.
    const replay = await browserFetch(`${s.base}/connect/callback?state=${q.get('state')}&code=x`)
    expect(replay.status).toBe(400)

    const conns = await flowConnections(s, setup.org, flow.id)
    expect(conns).toHaveLength(1)
    conn = conns[0]
    expect(conn).toMatchObject({ connection_id: setup.source.id, status: 'active', failure_code: null })
    expect(conn.id).toStartWith('conn_')
  })

  test('tokens are stored encrypted at rest', async () => {
    const [row] = await s.sql<any[]>`select access_token, refresh_token, source_patient_id from connection where id = ${conn.id}`
    expect(row.access_token).toMatch(/^v2\./)
    expect(row.refresh_token).toMatch(/^v2\./)
    expect(row.source_patient_id).toBe(ehr.patientId)
  })

  test("the sync stores the source patient's records under our ids, linked and tagged with the source", async () => {
    const done = await syncDone(s, setup.org, patientId, conn.id)
    expect(done.sync).toMatchObject({ status: 'succeeded', error: null })
    const sourceBundle = (await (await ehr.source.fhirFetch(`/Patient/${ehr.patientId}`)).json()) as any
    expect(sourceBundle.id).toBe(ehr.patientId)

    const system = patientIdSystem(setup.org.id)
    const found = (await (await s.fhirFetch(`/Patient?identifier=${encodeURIComponent(`${system}|${patientId}`)}`)).json()) as any
    expect(found.entry).toHaveLength(1)
    const ours = found.entry[0].resource
    expect(ours.id).not.toBe(ehr.patientId)
    expect(ours.meta.source).toBe(`${ehr.fhirBase}#${setup.source.id}`)

    const sourceSide = await compartment(async (p) => (await ehr.source.fhirFetch(p)).json() as any, ehr.patientId)
    const ourSide = await compartment(async (p) => (await s.fhirFetch(p)).json() as any, ours.id)
    expect(sourceSide.length).toBeGreaterThan(50)
    expect(ourSide).toEqual(sourceSide)
    expect(done.sync.total).toBeGreaterThanOrEqual(sourceSide.length)

    // References point at our copies: an Encounter's subject is our Patient, its provider ours too.
    const enc = (await (await s.fhirFetch(`/Patient/${ours.id}/Encounter?_count=1`)).json()) as any
    const e = enc.entry[0].resource
    expect(e.subject.reference).toBe(`Patient/${ours.id}`)
    expect(e.meta.source).toBe(`${ehr.fhirBase}#${setup.source.id}`)
    if (e.serviceProvider) expect((await s.fhirFetch(`/${e.serviceProvider.reference}`)).status).toBe(200)
  })

  test('Done completes the flow and returns to return_url with patient_id and the flow id', async () => {
    const res = await pressDone(flow)
    expect(res.status).toBe(303)
    const back = new URL(res.headers.get('location') as string)
    expect(`${back.origin}${back.pathname}`).toBe('https://app.example.com/back')
    expect(Object.fromEntries(back.searchParams)).toEqual({ patient_id: patientId, patient_flow_id: flow.id })
    expect(((await (await call(s, setup.org, `/patient-flows/${flow.id}`)).json()) as any).status).toBe('complete')
    const page = await fetch(flow.url)
    expect(await page.text()).toContain('You are all set')
    // A completed flow cannot start another authorization.
    const again = await fetch(`${flow.url}/authorize`, {
      method: 'POST',
      body: new URLSearchParams({ source_id: setup.source.id }),
      redirect: 'manual',
    })
    expect(again.status).not.toBe(303)
  })

  test('periodic re-sync updates in place: no duplicates, no new versions, source changes propagate', async () => {
    const before = (await s.sql<{ n: number }[]>`select count(*)::int as n from resource where not deleted`)[0].n
    const first = await syncDone(s, setup.org, patientId, conn.id)
    // Change a resource at the source; the next periodic pull brings the change.
    const cond = ((await (await ehr.source.fhirFetch(`/Patient/${ehr.patientId}/Condition?_count=1`)).json()) as any).entry[0].resource
    cond.note = [{ text: 'changed at the source' }]
    expect((await ehr.source.fhirFetch(`/Condition/${cond.id}`, { method: 'PUT', json: cond })).status).toBe(200)
    const next = await syncDone(s, setup.org, patientId, conn.id, first.sync.last_synced_at)
    expect(next.sync.status).toBe('succeeded')
    const after = (await s.sql<{ n: number }[]>`select count(*)::int as n from resource where not deleted`)[0].n
    expect(after).toBe(before)
    const [changed] = await s.sql<{ our_id: string }[]>`select our_id from connect_resource_map where res_type = 'Condition' and source_id = ${cond.id}`
    const ours = (await (await s.fhirFetch(`/Condition/${changed.our_id}`)).json()) as any
    expect(ours.note).toEqual([{ text: 'changed at the source' }])
    expect(ours.meta.versionId).toBe('2')
    const versions = await s.sql<{ n: number }[]>`select count(*)::int as n from resource where version > 1`
    expect(versions[0].n).toBe(1)
  })

  test("a re-sync ends with the source's current set: what the source deleted is deleted here, history kept; the connection shows what changed", async () => {
    const first = await syncDone(s, setup.org, patientId, conn.id)
    // Delete at the source a resource nothing there references (the source refuses the others, 409).
    let removed: { type: string; id: string } | undefined
    for (const type of ['Immunization', 'Observation', 'Condition', 'Procedure']) {
      const b = (await (await ehr.source.fhirFetch(`/Patient/${ehr.patientId}/${type}?_count=50`)).json()) as any
      for (const e of b.entry ?? []) {
        if ((await ehr.source.fhirFetch(`/${type}/${e.resource.id}`, { method: 'DELETE' })).status === 200) {
          removed = { type, id: e.resource.id }
          break
        }
      }
      if (removed) break
    }
    expect(removed).toBeDefined()
    const gone = removed as { type: string; id: string }
    const [mapped] = await s.sql<{ our_id: string }[]>`select our_id from connect_resource_map where res_type = ${gone.type} and source_id = ${gone.id}`
    expect((await s.fhirFetch(`/${gone.type}/${mapped.our_id}`)).status).toBe(200)

    const next = await syncDone(s, setup.org, patientId, conn.id, first.sync.last_synced_at)
    expect(next.sync.status).toBe('succeeded')
    expect(next.sync.changes).toEqual({ created: 0, updated: 0, deleted: 1, unchanged: next.sync.total })
    expect(first.sync.changes.deleted).toBe(0)
    // Deleted here (410), its history kept; the export no longer serves it.
    expect((await s.fhirFetch(`/${gone.type}/${mapped.our_id}`)).status).toBe(410)
    const history = (await (await s.fhirFetch(`/${gone.type}/${mapped.our_id}/_history`)).json()) as any
    expect(history.total).toBeGreaterThanOrEqual(2)
    const exported = (await (await call(s, setup.org, `/patients/${patientId}/$everything?_type=${gone.type}`)).json()) as any
    expect(exported.entry.map((e: any) => e.resource.id)).not.toContain(mapped.our_id)
    // Exactly the source's current set, stored once each.
    const sourceSide = await compartment(async (p) => (await ehr.source.fhirFetch(p)).json() as any, ehr.patientId)
    const ours = ((await (await s.fhirFetch(`/Patient?identifier=${encodeURIComponent(`${patientIdSystem(setup.org.id)}|${patientId}`)}`)).json()) as any)
      .entry[0].resource.id
    expect(await compartment(async (p) => (await s.fhirFetch(p)).json() as any, ours)).toEqual(sourceSide)
    // An unchanged pull after that deletes nothing more.
    const again = await syncDone(s, setup.org, patientId, conn.id, next.sync.last_synced_at)
    expect(again.sync.changes).toEqual({ created: 0, updated: 0, deleted: 0, unchanged: again.sync.total })
  })

  test('disconnect revokes the connection and can remove the records that source brought', async () => {
    const bad = await call(s, setup.org, `/patients/${patientId}/connections/${conn.id}?delete_records=maybe`, { method: 'DELETE' })
    expect(bad.status).toBe(400)
    const res = await call(s, setup.org, `/patients/${patientId}/connections/${conn.id}?delete_records=true`, { method: 'DELETE' })
    expect(res.status).toBe(200)
    const body = (await res.json()) as any
    expect(body).toMatchObject({ id: conn.id, resource_type: 'connection', disconnected: true })
    expect(body.records_removed).toBeGreaterThan(50)
    const c = (await (await call(s, setup.org, `/patients/${patientId}`)).json()) as any
    expect(c.connections[0]).toMatchObject({ id: conn.id, status: 'disconnected' })
    const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource where not deleted`
    expect(n).toBe(0)
    const [row] = await s.sql<any[]>`select access_token from connection where id = ${conn.id}`
    expect(row.access_token).toBeNull()
  })
})
