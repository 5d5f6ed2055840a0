// The patient API's export, GET /patients/{id}/$everything, over HTTP: a Synthea patient linked to an
// organization's patient_id by the patient-id identifier, paged to the end with _count=7 in both
// directions and compared entry by entry with FHIR Patient/{id}/$everything (the compartment as
// `match`, what it references as `include`); every fullUrl read back with the organization's key;
// filters (`_since` exclusive), the self link, validation, isolation; the page
// cache of a large export built by the export-cache worker (EXPORT_INLINE_MAX is low here); and the
// PostgreSQL page cache of the embedded form.
import { beforeAll, describe, expect, test } from 'bun:test'
import IORedis from 'ioredis'
import { exportPatientPage } from '../shared/export/patient-export'
import { Repo } from '../shared/fhir/repo/repo'
import { patientIdSystem } from '../shared/patients/identifier'
import { linkOf, type LoadedPatient, loadSyntheaPatient, pageAll } from './export-data'
import { useTestServer } from './harness'
import { call, createOrg, expectError, type Org } from './patients-client'

// No rate limit here: one test reads back every entry of the export.
const s = useTestServer({ EXPORT_INLINE_MAX: '50', PATIENT_API_RATE_LIMIT: '0' })
let org: Org
let stranger: Org
let alberto: LoadedPatient
/** Type/id of the patient's compartment, from compartment searches (GET /fhir/Patient/{id}/{type}). */
let compartment: string[]

const sorted = (xs: string[]) => [...xs].sort()
const refsOf = (bundle: any): string[] => (bundle.entry ?? []).map((e: any) => `${e.resource.resourceType}/${e.resource.id}`)
const exportOf = (o: Org, patientId: string, query = '') => call(s, o, `/patients/${patientId}/$everything${query ? `?${query}` : ''}`)
const get = async (url: string): Promise<any> => {
  const res = await call(s, org, url.slice(s.base.length))
  expect(res.status).toBe(200)
  return res.json()
}

beforeAll(async () => {
  org = await createOrg(s, 'Export Org')
  stranger = await createOrg(s, 'Stranger Org')
  alberto = await loadSyntheaPatient(s, 'Alberto_Armstrong_dc9335d0-bbdd-4120-8ae9-baa6604343b6.json')
  // Link the FHIR Patient to the organization's patient_id with the patient-id identifier.
  const patient: any = await (await s.fhirFetch(`/Patient/${alberto.patientId}`)).json()
  patient.identifier = [...(patient.identifier ?? []), { system: patientIdSystem(org.id), value: 'user_42' }]
  expect((await s.fhirFetch(`/Patient/${alberto.patientId}`, { method: 'PUT', json: patient })).status).toBe(200)
  expect((await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'user_42' } })).status).toBe(200)
  expect((await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'unlinked' } })).status).toBe(200)
  const types = [...new Set(alberto.refs.map((r) => r.split('/')[0]))].filter((t) => t !== 'Patient')
  compartment = [`Patient/${alberto.patientId}`]
  for (const type of types) {
    const res = await s.fhirFetch(`/Patient/${alberto.patientId}/${type}?_count=200`)
    if (res.status !== 200) continue // not a compartment type (Organization, Practitioner)
    const b: any = await res.json()
    expect(b.link.some((l: any) => l.relation === 'next')).toBe(false)
    compartment.push(...refsOf(b))
  }
}, 60_000)

describe('GET /patients/{id}/$everything', () => {
  test('pages to the end with _count=7 in both directions: the patient compartment, once each', async () => {
    const res = await exportOf(org, 'user_42', '_count=7')
    expect(res.status).toBe(200)
    const first: any = await res.json()
    expect(Object.keys(first).sort()).toEqual(['entry', 'link', 'resourceType', 'total', 'type'])
    expect(first.resourceType).toBe('Bundle')
    expect(first.type).toBe('searchset')
    expect(first.total).toBe(alberto.refs.length)
    expect(first.entry).toHaveLength(7)
    expect(first.entry[0]).toEqual({
      fullUrl: `${s.base}/patients/user_42/fhir/Patient/${alberto.patientId}`,
      resource: expect.any(Object),
      search: { mode: 'match' },
    })
    expect(linkOf(first, 'self')).toBe(`${s.base}/patients/user_42/$everything?_count=7`)
    expect(linkOf(first, 'previous')).toBeUndefined()
    const next = new URL(linkOf(first, 'next') as string)
    expect(next.searchParams.get('starting_after')).toMatch(/^[0-9A-Za-z]{12}$/)
    expect(next.searchParams.get('_count')).toBe('7')

    const forward = await pageAll(first, 'next', get)
    expect(forward.pages).toHaveLength(Math.ceil(compartment.length / 7))
    expect(new Set(forward.refs).size).toBe(forward.refs.length)
    expect(sorted(forward.refs)).toEqual(sorted(alberto.refs))

    const last = forward.pages[forward.pages.length - 1]
    expect(linkOf(last, 'next')).toBeUndefined()
    const before = new URL(linkOf(last, 'previous') as string)
    expect(before.searchParams.get('ending_before')).toMatch(/^[0-9A-Za-z]{12}$/)
    const backward = await pageAll(last, 'previous', get)
    expect(backward.refs).toEqual(forward.refs)
  })

  test('entry by entry the same as FHIR Patient/{id}/$everything; the compartment is match, what it references include', async () => {
    const ours = await pageAll(await (await exportOf(org, 'user_42', '_count=50')).json(), 'next', get)
    const fhirFirst: any = await (await s.fhirFetch(`/Patient/${alberto.patientId}/$everything?_count=50`)).json()
    const theirs = await pageAll(fhirFirst, 'next', async (url) => (await s.fhirFetch(url.slice(s.fhir.length))).json())
    const entries = (p: { pages: any[] }) => p.pages.flatMap((b) => b.entry ?? [])
    const [a, b] = [entries(ours), entries(theirs)]
    expect(a.length).toBe(b.length)
    expect(a.length).toBe(alberto.refs.length)
    const inCompartment = new Set(compartment)
    for (let i = 0; i < a.length; i++) {
      const ref = `${b[i].resource.resourceType}/${b[i].resource.id}`
      expect(`${a[i].resource.resourceType}/${a[i].resource.id}`).toBe(ref)
      expect(a[i].resource).toEqual(b[i].resource)
      expect(a[i].fullUrl).toBe(`${s.base}/patients/user_42/fhir/${ref}`)
      expect({ ref, mode: a[i].search.mode }).toEqual({ ref, mode: inCompartment.has(ref) ? 'match' : 'include' })
    }
    const included = a.filter((e) => e.search.mode === 'include').map((e) => e.resource.resourceType)
    expect(included).toContain('Practitioner')
    expect(included).toContain('Organization')
  })

  test('every fullUrl, and every reference inside the export, reads back with the organization key', async () => {
    const all = await pageAll(await (await exportOf(org, 'user_42', '_count=100')).json(), 'next', get)
    const entries = all.pages.flatMap((b) => b.entry)
    const byUrl = new Map(entries.map((e: any) => [e.fullUrl, e.resource]))
    for (const [url, resource] of byUrl) {
      const res = await call(s, org, (url as string).slice(s.base.length))
      expect({ url, status: res.status }).toEqual({ url, status: 200 })
      expect(await res.json()).toEqual(resource)
    }
    // Relative references resolve against the fullUrl's base to entries of the export.
    const base = `${s.base}/patients/user_42/fhir`
    const refs = new Set<string>()
    const walk = (v: any) => {
      if (Array.isArray(v)) v.forEach(walk)
      else if (v && typeof v === 'object') {
        if (typeof v.reference === 'string' && /^[A-Z][A-Za-z]+\/[^/]+$/.test(v.reference)) refs.add(v.reference)
        Object.values(v).forEach(walk)
      }
    }
    entries.forEach((e: any) => walk(e.resource))
    expect([...refs].some((r) => r.startsWith('Practitioner/'))).toBe(true)
    expect([...refs].filter((r) => !byUrl.has(`${base}/${r}`))).toEqual([])
    // Only that patient's export: another organization, another patient's resource, or a made-up id are 404.
    const first = entries[1].fullUrl.slice(s.base.length)
    await expectError(await call(s, stranger, first), 404, 'not_found_error', 'resource_not_found')
    const other: any = await (await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', name: [{ family: 'Other' }] } })).json()
    await expectError(await call(s, org, `/patients/user_42/fhir/Patient/${other.id}`), 404, 'not_found_error', 'resource_not_found', 'id')
    await expectError(await call(s, org, `/patients/unlinked/fhir/Patient/${alberto.patientId}`), 404, 'not_found_error', 'resource_not_found', 'id')
    // The FHIR base itself stays closed to an organization key.
    expect((await call(s, org, `/fhir/Patient/${alberto.patientId}`)).status).toBe(401)
  })

  test('the self link carries the parameters applied, not unknown ones', async () => {
    const b: any = await (await exportOf(org, 'user_42', '_count=3&foo=bar&_type=Encounter,Condition&_pretty=true')).json()
    expect(linkOf(b, 'self')).toBe(`${s.base}/patients/user_42/$everything?_type=Condition%2CEncounter&_count=3`)
    const next = linkOf(b, 'next') as string
    const second: any = await get(`${next}&junk=1`)
    const cursor = new URL(next).searchParams.get('starting_after')
    expect(linkOf(second, 'self')).toBe(`${s.base}/patients/user_42/$everything?_type=Condition%2CEncounter&_count=3&starting_after=${cursor}`)
    expect(linkOf(await (await exportOf(org, 'user_42', 'x=1')).json(), 'self')).toBe(`${s.base}/patients/user_42/$everything`)
  })

  test('_type and _since filter; the links keep the filters', async () => {
    const res = await exportOf(org, 'user_42', '_type=Encounter,Condition&_count=3')
    const b: any = await res.json()
    const expected = compartment.filter((r) => r.startsWith('Encounter/') || r.startsWith('Condition/'))
    expect(b.total).toBe(expected.length)
    const next = new URL(linkOf(b, 'next') as string)
    expect(next.searchParams.get('_type')).toBe('Condition,Encounter')
    const all = await pageAll(b, 'next', get)
    expect(sorted(all.refs)).toEqual(sorted(expected))

    const t = new Date()
    await Bun.sleep(5)
    const enc: any = await (await s.fhirFetch(`/${expected.find((r) => r.startsWith('Encounter/'))}`)).json()
    expect((await s.fhirFetch(`/Encounter/${enc.id}`, { method: 'PUT', json: { ...enc, status: 'cancelled' } })).status).toBe(200)
    const since: any = await (await exportOf(org, 'user_42', `_since=${encodeURIComponent(t.toISOString())}`)).json()
    expect(refsOf(since)).toEqual([`Encounter/${enc.id}`])
    // "changed after": exclusive. A resource whose lastUpdated equals _since is not in; one a millisecond earlier is.
    const updated: any = await (await s.fhirFetch(`/Encounter/${enc.id}`)).json()
    const at = updated.meta.lastUpdated as string
    expect(refsOf(await (await exportOf(org, 'user_42', `_since=${encodeURIComponent(at)}`)).json())).toEqual([])
    const justBefore = new Date(Date.parse(at) - 1).toISOString()
    expect(refsOf(await (await exportOf(org, 'user_42', `_since=${encodeURIComponent(justBefore)}`)).json())).toEqual([`Encounter/${enc.id}`])
    const byDate: any = await (await exportOf(org, 'user_42', '_since=2999-01-01')).json()
    expect(byDate.total).toBe(0)
    expect(byDate.entry).toEqual([])
  })

  test('validation: _count, _type, _since and cursors, each naming its param', async () => {
    for (const c of ['0', '101', 'abc', '-1'])
      await expectError(await exportOf(org, 'user_42', `_count=${c}`), 400, 'invalid_request_error', 'invalid_data', '_count')
    await expectError(await exportOf(org, 'user_42', '_type=Observation,Nope'), 400, 'invalid_request_error', 'invalid_data', '_type')
    await expectError(await exportOf(org, 'user_42', '_since=last-week'), 400, 'invalid_request_error', 'invalid_data', '_since')
    await expectError(await exportOf(org, 'user_42', 'starting_after=short'), 400, 'invalid_request_error', 'invalid_data', 'starting_after')
    await expectError(await exportOf(org, 'user_42', 'ending_before=AAAAAAAAAAAA'), 400, 'invalid_request_error', 'invalid_data', 'ending_before')
    await expectError(
      await exportOf(org, 'user_42', 'starting_after=AAAAAAAAAAAA&ending_before=AAAAAAAAAAAA'),
      400,
      'invalid_request_error',
      'bad_request',
      'ending_before',
    )
    const first: any = await (await exportOf(org, 'user_42', '_count=5&_type=Observation')).json()
    const cursor = new URL(linkOf(first, 'next') as string).searchParams.get('starting_after')
    // the same cursor with other filters, or for another patient: refused
    await expectError(await exportOf(org, 'user_42', `_type=Condition&starting_after=${cursor}`), 400, 'invalid_request_error', 'invalid_data', '_type')
    await expectError(await exportOf(org, 'unlinked', `starting_after=${cursor}`), 400, 'invalid_request_error', 'invalid_data', 'starting_after')
  })

  test('a patient with no linked FHIR Patient exports an empty Bundle; other organizations see nothing', async () => {
    const empty: any = await (await exportOf(org, 'unlinked')).json()
    expect(empty.total).toBe(0)
    expect(empty.entry).toEqual([])
    expect(empty.link.map((l: any) => l.relation)).toEqual(['self'])
    await expectError(await exportOf(stranger, 'user_42'), 404, 'not_found_error', 'resource_not_found')
    await expectError(await exportOf(org, 'nobody'), 404, 'not_found_error', 'resource_not_found')
  })
})

describe('page cache', () => {
  test('a large export (over EXPORT_INLINE_MAX) gets its snapshot from the export-cache worker', async () => {
    const redis = new IORedis(s.config.redisUrl as string)
    try {
      const done = () => redis.zcard(`${s.config.queuePrefix}:export-cache:completed`)
      const before = await done()
      const first: any = await (await s.fhirFetch(`/Patient/${alberto.patientId}/$everything?_count=10`)).json()
      expect(await done()).toBe(before + 1)
      expect(first.total).toBe(alberto.refs.length)
      const all = await pageAll(first, 'next', async (url) => (await s.fhirFetch(url.slice(s.fhir.length))).json())
      expect(sorted(all.refs)).toEqual(sorted(alberto.refs))
      // The patient API's export shares the implementation and the worker.
      const viaApi: any = await (await exportOf(org, 'user_42', '_count=100')).json()
      expect(viaApi.total).toBe(alberto.refs.length)
    } finally {
      redis.disconnect()
    }
  })

  test('without Redis (embedded form) cursors and snapshots are kept in PostgreSQL', async () => {
    const deps = { repo: new Repo(s.sql), config: { queuePrefix: s.config.queuePrefix, exportInlineMax: 10_000 } }
    const req = (query: string) => ({
      organizationId: org.id,
      patientId: 'user_42',
      query: new URLSearchParams(query),
      selfUrl: `${s.base}/patients/user_42/$everything`,
    })
    const [{ n: cursorsBefore }] = await s.sql<{ n: number }[]>`select count(*)::int as n from export_cursor`
    const first: any = await exportPatientPage(deps, req('_count=9'))
    expect(first.total).toBe(alberto.refs.length)
    const all = await pageAll(first, 'next', async (url) => exportPatientPage(deps, req(new URL(url).search.slice(1))))
    expect(sorted(all.refs)).toEqual(sorted(alberto.refs))
    const [{ n: cursorsAfter }] = await s.sql<{ n: number }[]>`select count(*)::int as n from export_cursor`
    expect(cursorsAfter).toBeGreaterThan(cursorsBefore)
    // A PostgreSQL cursor is unknown to the Redis cache of the HTTP surface, and the other way round.
    const cursor = new URL(linkOf(first, 'next') as string).searchParams.get('starting_after')
    await expectError(await exportOf(org, 'user_42', `_count=9&starting_after=${cursor}`), 400, 'invalid_request_error', 'invalid_data', 'starting_after')
  })
})
