// Patient/$everything over HTTP: a Synthea patient's compartment and what it references, _type,
// _since, _lastUpdated, paging to the end in both directions, pages that stay consistent while records
// change, the type level, POST with Parameters, and HAPI's errors.
import { beforeAll, describe, expect, test } from 'bun:test'
import { linkOf, type LoadedPatient, loadSyntheaPatient, pageAll } from './export-data'
import { createResource, readJson, useTestServer } from './harness'

const s = useTestServer()
let abdul: LoadedPatient
let other: { patientId: string; refs: string[] }

const get = async (url: string): Promise<any> => {
  const res = await s.fhirFetch(url.slice(s.fhir.length))
  expect(res.status).toBe(200)
  return res.json()
}
const everything = (id: string, query = ''): Promise<any> => get(`${s.fhir}/Patient/${id}/$everything${query ? `?${query}` : ''}`)
const refsOf = (bundle: any): string[] => (bundle.entry ?? []).map((e: any) => `${e.resource.resourceType}/${e.resource.id}`)
const sorted = (xs: string[]) => [...xs].sort()

beforeAll(async () => {
  abdul = await loadSyntheaPatient(s, 'Abdul_Koepp_e925b0f3-8006-43f6-aa31-94bd215e55e7.json')
  const p = await createResource(s, { resourceType: 'Patient', name: [{ family: 'Other' }] })
  const o = await createResource(s, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${p.id}` } })
  other = { patientId: p.id, refs: [`Patient/${p.id}`, `Observation/${o.id}`] }
}, 60_000)

describe('instance level', () => {
  test('the patient, its compartment and the resources they reference (the whole Synthea Bundle), as a searchset', async () => {
    const first = await everything(abdul.patientId, '_count=500')
    expect(first.resourceType).toBe('Bundle')
    expect(first.type).toBe('searchset')
    expect(first.total).toBe(abdul.refs.length)
    expect(linkOf(first, 'self')).toContain(`/Patient/${abdul.patientId}/$everything`)
    expect(linkOf(first, 'next')).toBeUndefined()
    expect(first.entry[0].resource.resourceType).toBe('Patient')
    expect(first.entry[0].fullUrl).toBe(`${s.fhir}/Patient/${abdul.patientId}`)
    expect(first.entry.every((e: any) => e.search.mode === 'match' && e.fullUrl === `${s.fhir}/${e.resource.resourceType}/${e.resource.id}`)).toBe(true)
    const refs = refsOf(first)
    expect(sorted(refs)).toEqual(sorted(abdul.refs))
    // referenced, not in the compartment: found by following references
    expect(refs.some((r) => r.startsWith('Practitioner/'))).toBe(true)
    expect(refs.some((r) => r.startsWith('Organization/'))).toBe(true)
    expect(refs).not.toContain(other.refs[1])
  })

  test('_count=7 pages to the end and back with no duplicate and no gap', async () => {
    const first = await everything(abdul.patientId, '_count=7')
    expect(first.entry).toHaveLength(7)
    expect(first.total).toBe(abdul.refs.length)
    expect(linkOf(first, 'previous')).toBeUndefined()
    const next = linkOf(first, 'next') as string
    expect(new URL(next).searchParams.get('_getpages')).toMatch(/^[0-9A-Za-z]{12}$/)
    const forward = await pageAll(first, 'next', get)
    expect(forward.pages).toHaveLength(Math.ceil(abdul.refs.length / 7))
    expect(new Set(forward.refs).size).toBe(forward.refs.length)
    expect(sorted(forward.refs)).toEqual(sorted(abdul.refs))
    for (const p of forward.pages) expect(p.total).toBe(abdul.refs.length)
    const last = forward.pages[forward.pages.length - 1]
    const backward = await pageAll(last, 'previous', get)
    expect(backward.refs).toEqual(forward.refs)
  })

  test('_type restricts to those types (a referenced type included when named)', async () => {
    const b = await everything(abdul.patientId, '_type=Observation,Condition&_count=500')
    const expected = abdul.refs.filter((r) => r.startsWith('Observation/') || r.startsWith('Condition/'))
    expect(b.total).toBe(expected.length)
    expect(sorted(refsOf(b))).toEqual(sorted(expected))
    const p = await everything(abdul.patientId, '_type=Practitioner')
    expect(refsOf(p)).toEqual(abdul.refs.filter((r) => r.startsWith('Practitioner/')))
  })

  test('_type with an unknown type is 400', async () => {
    const res = await s.fhirFetch(`/Patient/${abdul.patientId}/$everything?_type=Observation,Nope`)
    expect(res.status).toBe(400)
  })

  test('_since and _lastUpdated keep resources last updated from then on', async () => {
    const obsRef = abdul.refs.find((r) => r.startsWith('Observation/')) as string
    const before = new Date()
    await new Promise((r) => setTimeout(r, 5))
    const obs: any = await (await s.fhirFetch(`/${obsRef}`)).json()
    const res = await s.fhirFetch(`/${obsRef}`, { method: 'PUT', json: { ...obs, status: 'amended' } })
    expect(res.status).toBe(200)
    const since = await everything(abdul.patientId, `_since=${encodeURIComponent(before.toISOString())}`)
    expect(refsOf(since)).toEqual([obsRef])
    expect(since.entry[0].resource.status).toBe('amended')
    const lastUpdated = await everything(abdul.patientId, `_lastUpdated=ge${encodeURIComponent(before.toISOString())}`)
    expect(refsOf(lastUpdated)).toEqual([obsRef])
    const older = await everything(abdul.patientId, `_lastUpdated=lt${encodeURIComponent(before.toISOString())}&_count=500`)
    expect(older.total).toBe(abdul.refs.length - 1)
    const bad = await s.fhirFetch(`/Patient/${abdul.patientId}/$everything?_since=yesterday`)
    expect(bad.status).toBe(400)
  })

  test('pages stay consistent while resources change underneath', async () => {
    const first = await everything(abdul.patientId, '_count=20')
    const total = first.total
    const firstRefs = refsOf(first)
    // Change resources that later pages hold: one updated, one deleted; and a new one in the compartment.
    const all = (await everything(abdul.patientId, '_count=500')).entry.map((e: any) => e.resource)
    const updated = all.find((r: any) => r.resourceType === 'Observation' && !firstRefs.includes(`Observation/${r.id}`))
    const deleted = all.find((r: any) => r.resourceType === 'Immunization' && !firstRefs.includes(`Immunization/${r.id}`))
    expect((await s.fhirFetch(`/Observation/${updated.id}`, { method: 'PUT', json: { ...updated, status: 'cancelled' } })).status).toBe(200)
    expect((await s.fhirFetch(`/Immunization/${deleted.id}`, { method: 'DELETE' })).status).toBe(200)
    const added = await createResource(s, {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'new' },
      subject: { reference: `Patient/${abdul.patientId}` },
    })

    const paged = await pageAll(first, 'next', get)
    expect(paged.refs).toHaveLength(total)
    expect(new Set(paged.refs).size).toBe(total)
    const seen = paged.pages.flatMap((p) => p.entry.map((e: any) => e.resource))
    expect(seen.find((r: any) => r.resourceType === 'Observation' && r.id === updated.id).meta.versionId).toBe(updated.meta.versionId)
    expect(seen.some((r: any) => r.resourceType === 'Immunization' && r.id === deleted.id)).toBe(true)
    expect(paged.refs).not.toContain(`Observation/${added.id}`)

    // A new export sees the changes.
    const fresh = await everything(abdul.patientId, '_count=500')
    expect(fresh.total).toBe(total)
    const freshRefs = refsOf(fresh)
    expect(freshRefs).toContain(`Observation/${added.id}`)
    expect(freshRefs).not.toContain(`Immunization/${deleted.id}`)
    expect(fresh.entry.find((e: any) => e.resource.id === updated.id).resource.status).toBe('cancelled')
  })

  test('unknown patient is 404, a deleted one 410', async () => {
    const res = await s.fhirFetch('/Patient/no-such-patient/$everything')
    expect(res.status).toBe(404)
    expect((await readJson(res)).issue[0].diagnostics).toContain('HAPI-2001')
    const p = await createResource(s, { resourceType: 'Patient' })
    expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBe(200)
    expect((await s.fhirFetch(`/Patient/${p.id}/$everything`)).status).toBe(410)
  })

  test('_offset is rejected (HAPI-1106); an unknown paging cursor is 410', async () => {
    const res = await s.fhirFetch(`/Patient/${abdul.patientId}/$everything?_offset=10`)
    expect(res.status).toBe(400)
    expect((await readJson(res)).issue[0].diagnostics).toContain('HAPI-1106')
    expect((await s.fhirFetch(`/Patient/${abdul.patientId}/$everything?_getpages=AAAAAAAAAAAA`)).status).toBe(410)
    expect((await s.fhirFetch(`/Patient/${abdul.patientId}/$everything?_getpages=bad`)).status).toBe(410)
    // a cursor of one patient's export does not serve another's
    const first = await everything(abdul.patientId, '_count=5')
    const cursor = new URL(linkOf(first, 'next') as string).searchParams.get('_getpages')
    expect((await s.fhirFetch(`/Patient/${other.patientId}/$everything?_getpages=${cursor}`)).status).toBe(410)
  })

  test('POST with a Parameters body', async () => {
    const res = await s.fhirFetch(`/Patient/${abdul.patientId}/$everything`, {
      method: 'POST',
      json: {
        resourceType: 'Parameters',
        parameter: [
          { name: '_type', valueString: 'Encounter' },
          { name: '_count', valueInteger: 3 },
        ],
      },
    })
    expect(res.status).toBe(200)
    const b: any = await res.json()
    expect(b.total).toBe(abdul.refs.filter((r) => r.startsWith('Encounter/')).length)
    expect(b.entry).toHaveLength(3)
    expect(refsOf(b).every((r) => r.startsWith('Encounter/'))).toBe(true)
  })

  test('an export repeated over unchanged data reuses its snapshot and cursors; a change makes a new one', async () => {
    const a = await everything(other.patientId, '_count=1')
    const b = await everything(other.patientId, '_count=1')
    expect(linkOf(b, 'next')).toBe(linkOf(a, 'next') as string)
    const o = await createResource(s, {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'y' },
      subject: { reference: `Patient/${other.patientId}` },
    })
    other.refs.push(`Observation/${o.id}`)
    const c = await everything(other.patientId, '_count=1')
    expect(c.total).toBe(a.total + 1)
    expect(linkOf(c, 'next')).not.toBe(linkOf(a, 'next') as string)
    // the earlier export still pages over its own snapshot
    expect((await pageAll(a, 'next', get)).refs).toHaveLength(a.total)
  })
})

describe('type level', () => {
  test('all patients, or those of _id', async () => {
    const one = await get(`${s.fhir}/Patient/$everything?_id=${other.patientId}`)
    expect(sorted(refsOf(one))).toEqual(sorted(other.refs))
    const all = await pageAll(await get(`${s.fhir}/Patient/$everything?_count=50`), 'next', get)
    for (const r of [...other.refs, `Patient/${abdul.patientId}`]) expect(all.refs).toContain(r)
    expect(new Set(all.refs).size).toBe(all.refs.length)
    const none = await get(`${s.fhir}/Patient/$everything?_id=nobody`)
    expect(none.total).toBe(0)
    expect(none.entry).toEqual([])
  })
})
