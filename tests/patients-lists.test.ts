// Lists of the patient API: the envelope, newest first with a stable tie-break, paging to the end with
// limit/starting_after, limit bounds, and malformed or foreign cursors refused with param.
import { describe, expect, test } from 'bun:test'
import { useTestServer, readJson } from './harness'
import { call, createOrg, createSource, expectError, type Org } from './patients-client'

const s = useTestServer()

/** Follows next_cursor to the end; returns the ids in order and the number of pages. */
async function pageAll(org: Org, path: string, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const sep = path.includes('?') ? '&' : '?'
    const res = await call(s, org, `${path}${sep}limit=${limit}${cursor ? `&starting_after=${encodeURIComponent(cursor)}` : ''}`)
    expect(res.status).toBe(200)
    const page = await readJson(res)
    expect(Object.keys(page).sort()).toEqual(['data', 'has_more', 'next_cursor', 'resource_type'])
    expect(page.resource_type).toBe('list')
    expect(page.data.length).toBeLessThanOrEqual(limit)
    expect(page.has_more).toBe(page.next_cursor !== null)
    ids.push(...page.data.map((x: any) => x.id))
    cursor = page.next_cursor
    pages++
  } while (cursor)
  return { ids, pages }
}

/**
 * Moves the identity sequence of `table`'s seq so that the next rows cross a power of ten (…98, 99, 100,
 * 101…): ordered as text instead of numbers, 100 would come before 99.
 */
async function crossPowerOfTen(table: string): Promise<void> {
  await s.sql`select setval(pg_get_serial_sequence(${table}, 'seq'), power(10, ceil(log(nextval(pg_get_serial_sequence(${table}, 'seq')) + 20)))::bigint - 6)`
}

describe('paging to the end', () => {
  test('patients: newest first, every one once, across pages', async () => {
    const org = await createOrg(s)
    const created: string[] = []
    for (let i = 0; i < 23; i++) {
      await call(s, org, '/patients', { method: 'POST', json: { patient_id: `p${i}` } })
      created.push(`p${i}`)
    }
    const { ids, pages } = await pageAll(org, '/patients', 5)
    expect(ids).toEqual(created.reverse())
    expect(pages).toBe(5)
    const exact = await pageAll(org, '/patients', 23)
    expect(exact.pages).toBe(1)
  })

  test('rows created in one instant keep a stable order (insertion order as tie-break)', async () => {
    const org = await createOrg(s)
    await crossPowerOfTen('patient')
    await s.sql`insert into patient (organization_id, patient_id) select ${org.id}, 'tie' || g from generate_series(1, 12) g`
    const [{ n }] = await s.sql`select count(distinct created_at)::int as n from patient where organization_id = ${org.id}`
    expect(n).toBe(1)
    const { ids } = await pageAll(org, '/patients', 5)
    expect(ids).toEqual(Array.from({ length: 12 }, (_, i) => `tie${12 - i}`))
  })

  test('the tie-break is numeric for FHIR sources and webhook endpoints and events too', async () => {
    const org = await createOrg(s)
    await crossPowerOfTen('fhir_source')
    await s.sql`insert into fhir_source (id, name, type, fhir_base_url, created_at)
      select 'fhirsrc_tie' || g, 'Tie ' || g, 'tie-test', 'https://tie' || g || '.example.com/fhir', date_trunc('milliseconds', now()) from generate_series(1, 12) g`
    expect((await pageAll(org, '/connections?type=tie-test', 5)).ids).toEqual(Array.from({ length: 12 }, (_, i) => `fhirsrc_tie${12 - i}`))

    await crossPowerOfTen('webhook_endpoint')
    await s.sql`insert into webhook_endpoint (id, organization_id, url, events, api_version, secret)
      select 'wh_tie' || g, ${org.id}, 'https://hooks.example.com/' || g, '{*}', '2024-01-01', 'whsec_x' from generate_series(1, 12) g`
    expect((await pageAll(org, '/webhooks', 5)).ids).toEqual(Array.from({ length: 12 }, (_, i) => `wh_tie${12 - i}`))

    await crossPowerOfTen('webhook_event')
    await s.sql`insert into webhook_event (id, organization_id, webhook_endpoint_id, type, api_version, payload)
      select 'evt_tie' || g, ${org.id}, 'wh_tie1', 'patient.created', '2024-01-01', json_build_object('id', 'evt_tie' || g)::text from generate_series(1, 12) g`
    expect((await pageAll(org, '/webhooks/wh_tie1/events', 5)).ids).toEqual(Array.from({ length: 12 }, (_, i) => `evt_tie${12 - i}`))
  })

  test('patient flows and sessions of a patient, with and without a status filter', async () => {
    const org = await createOrg(s)
    const flows: string[] = []
    const sessions: string[] = []
    for (let i = 0; i < 7; i++) {
      flows.push((await readJson(await call(s, org, '/patient-flows', { method: 'POST', json: { patient_id: 'lp', return_url: 'https://x.example.com' } }))).id)
      sessions.push((await readJson(await call(s, org, '/sessions', { method: 'POST', json: { patient_id: 'lp', return_url: 'https://x.example.com' } }))).id)
    }
    // One record, two views: both lists hold all 14, newest first, each in its own id form.
    const all = flows.flatMap((f, i) => [f, sessions[i]]).reverse()
    const asFlow = (id: string) => id.replace(/^sess_/, 'pf_')
    const asSession = (id: string) => id.replace(/^pf_/, 'sess_')
    expect((await pageAll(org, '/patients/lp/patient-flows', 3)).ids).toEqual(all.map(asFlow))
    expect((await pageAll(org, '/patients/lp/sessions', 2)).ids).toEqual(all.map(asSession))
    await s.sql`update patient_flow set expires_at = now() - interval '1 second' where id in (${flows[1]}, ${flows[4]}, ${sessions[5]})`
    expect((await pageAll(org, '/patients/lp/patient-flows?status=expired', 2)).ids).toEqual([asFlow(sessions[5]), flows[4], flows[1]])
    expect((await pageAll(org, '/patients/lp/sessions?status=expired', 2)).ids).toEqual([sessions[5], asSession(flows[4]), asSession(flows[1])])
    const open = all.filter((id) => ![flows[1], flows[4], sessions[5]].includes(id))
    expect((await pageAll(org, '/patients/lp/patient-flows?status=open', 4)).ids).toEqual(open.map(asFlow))
  })

  test('FHIR sources', async () => {
    const org = await createOrg(s)
    const made: string[] = []
    for (let i = 0; i < 6; i++) made.push((await createSource(s, { type: 'paging-test' })).id)
    expect((await pageAll(org, '/connections?type=paging-test', 4)).ids).toEqual([...made].reverse())
  })
})

describe('limit and cursors', () => {
  test('limit defaults to 10, accepts 1-100, refuses others with param limit', async () => {
    const org = await createOrg(s)
    await s.sql`insert into patient (organization_id, patient_id) select ${org.id}, 'l' || g from generate_series(1, 11) g`
    expect((await readJson(await call(s, org, '/patients'))).data).toHaveLength(10)
    expect((await readJson(await call(s, org, '/patients?limit=1'))).data).toHaveLength(1)
    expect((await readJson(await call(s, org, '/patients?limit=100'))).data).toHaveLength(11)
    for (const bad of ['0', '101', 'abc', '5.5', '-1', ''])
      await expectError(await call(s, org, `/patients?limit=${bad}`), 400, 'invalid_request_error', 'invalid_data', 'limit')
    await expectError(await call(s, org, '/patients/x/sessions?limit=0'), 400, 'invalid_request_error', 'invalid_data', 'limit')
  })

  test('malformed, edited and foreign cursors: 400 with param starting_after', async () => {
    const a = await createOrg(s)
    const b = await createOrg(s)
    for (const org of [a, b]) {
      await s.sql`insert into patient (organization_id, patient_id) select ${org.id}, 'c' || g from generate_series(1, 3) g`
      for (let i = 0; i < 3; i++) await call(s, org, '/sessions', { method: 'POST', json: { patient_id: 'c1', return_url: 'https://x.example.com' } })
    }
    const cursorOf = async (org: Org, path: string) => (await readJson(await call(s, org, path))).next_cursor as string
    const patientsCursor = await cursorOf(a, '/patients?limit=1')
    expect(patientsCursor).toBeString()
    expect((await call(s, a, `/patients?limit=1&starting_after=${patientsCursor}`)).status).toBe(200)
    const refused = async (org: Org, path: string) => expectError(await call(s, org, path), 400, 'invalid_request_error', 'invalid_data', 'starting_after')
    await refused(a, '/patients?starting_after=garbage')
    await refused(a, '/patients?starting_after=%F0%9F%98%80')
    const edited = patientsCursor.slice(0, 3) + (patientsCursor[3] === 'A' ? 'B' : 'A') + patientsCursor.slice(4)
    await refused(a, `/patients?starting_after=${edited}`)
    await refused(b, `/patients?limit=1&starting_after=${patientsCursor}`) // another organization
    await refused(a, `/patients?email=x@example.com&starting_after=${patientsCursor}`) // another filter
    await refused(a, `/patients/c1/sessions?starting_after=${patientsCursor}`) // another list
    const sessionsCursor = await cursorOf(a, '/patients/c1/sessions?limit=1')
    await refused(a, `/patients/c2/sessions?starting_after=${sessionsCursor}`) // another patient
    await refused(a, `/patients/c1/patient-flows?starting_after=${sessionsCursor}`)
    await refused(a, `/patients/c1/sessions?status=open&starting_after=${sessionsCursor}`)
    await refused(a, `/connections?starting_after=${sessionsCursor}`)
  })
})
