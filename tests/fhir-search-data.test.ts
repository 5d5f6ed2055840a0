// Search on real data: every Synthea bundle and the R4 examples, loaded over HTTP; each expected answer
// is computed here from the same files, never hard-coded. https://hl7.org/fhir/R4/search.html
// (reference behaviour: shared/notes/hapi-behaviour.md §2)
import { beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { type Loaded, loadR4Examples, loadSynthea, merge, ofType } from './load-data'
import { getOk, hasCoding, keys, linkPath, norm } from './search-expect'

// Resources are loaded one by one in any order, as a bulk load: HAPI's advice is to turn referential
// integrity off for that (docs/server_jpa/performance.md).
const s = useTestServer({ ENFORCE_REFERENTIAL_INTEGRITY: 'false' })
let data: Loaded
let synthea: Loaded

beforeAll(async () => {
  const examples = await loadR4Examples(s)
  synthea = await loadSynthea(s)
  data = merge(examples, synthea)
}, 120_000)

// --- expected answers, from the files ---------------------------------------------------------------

/** HAPI's string normalisation: accents stripped, upper-cased. */

/** The HumanName parts the `name` parameter indexes. */
const nameParts = (p: any): string[] =>
  (p.name ?? [])
    .flatMap((n: any) => [n.text, n.family, ...(n.given ?? []), ...(n.prefix ?? []), ...(n.suffix ?? [])])
    .filter((x: unknown) => typeof x === 'string')

/** Patients whose `name` matches `value` (starts-with, case- and accent-insensitive). */
const nameMatches = (value: string) => (p: any) => nameParts(p).some((part) => norm(part).startsWith(norm(value)))

const refersTo = (ref: any, target: string) => ref?.reference === target

function mostFrequent<T>(values: T[]): T {
  const counts = new Map<T, number>()
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1)
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || String(a[0]).localeCompare(String(b[0])))[0][0]
}

/** The Synthea patients in id order (load order varies from run to run). */
const syntheaPatients = () => ofType(synthea, 'Patient').sort((a, b) => (a.id < b.id ? -1 : 1))
const observations = () => ofType(data, 'Observation')

// --- HTTP -------------------------------------------------------------------------------------------

const get = (path: string, headers?: Record<string, string>) => getOk(s, path, headers)

/** Follows `next` to the end; the pages' bundles. */
async function pages(path: string): Promise<any[]> {
  const out: any[] = []
  for (let next: string | undefined = path; next; next = linkPath(out[out.length - 1], 'next')) {
    if (out.length > 500) throw new Error(`more than 500 pages for ${path}`)
    out.push(await get(next))
  }
  return out
}

const entries = (bundle: any, mode: 'match' | 'include') => (bundle.entry ?? []).filter((e: any) => e.search?.mode === mode)

/** `Type/id` of every match over all pages, sorted. */
async function matchKeys(path: string): Promise<string[]> {
  const all = (await pages(path)).flatMap((b) => entries(b, 'match'))
  return keys(all.map((e: any) => e.resource))
}

// --- tests ------------------------------------------------------------------------------------------

describe('data loaded', () => {
  test('every distinct resource of the Synthea bundles and the accepted R4 examples is on the server', async () => {
    expect((await get('/?_summary=count')).total).toBe(data.resources.size)
    expect((await get('/Patient?_summary=count')).total).toBe(ofType(data, 'Patient').length)
  })
})

describe('string: Patient?name', () => {
  test('name=<family of a loaded patient, lower-cased> finds exactly the patients with a name part starting with it', async () => {
    const family = mostFrequent(syntheaPatients().flatMap((p) => (p.name ?? []).map((n: any) => n.family).filter(Boolean)))
    const expected = ofType(data, 'Patient').filter(nameMatches(family))
    expect(expected.some((p) => p.name.some((n: any) => n.family === family))).toBe(true)
    expect(await matchKeys(`/Patient?name=${encodeURIComponent(family.toLowerCase())}&_count=200`)).toEqual(keys(expected))
  })

  test('name=<prefix of a family> finds every patient with a name part starting with the prefix', async () => {
    const family: string = syntheaPatients()[0].name[0].family
    const prefix = family.slice(0, 3).toUpperCase()
    const expected = ofType(data, 'Patient').filter(nameMatches(prefix))
    expect(expected.length).toBeGreaterThanOrEqual(1)
    expect(await matchKeys(`/Patient?name=${encodeURIComponent(prefix)}&_count=200`)).toEqual(keys(expected))
  })

  test('accent-insensitive both ways: an unaccented query finds an accented name, an accented query an unaccented one', async () => {
    const accented = syntheaPatients()
      .flatMap(nameParts)
      .find((part) => norm(part) !== part.toUpperCase())
    if (!accented) throw new Error('no accented name in the Synthea patients')
    const plain = accented
      .normalize('NFD')
      .replace(/\p{Mn}/gu, '')
      .toLowerCase()
    const expected = ofType(data, 'Patient').filter(nameMatches(plain))
    expect(expected.length).toBeGreaterThanOrEqual(1)
    expect(await matchKeys(`/Patient?name=${encodeURIComponent(plain)}&_count=200`)).toEqual(keys(expected))

    const family: string = syntheaPatients()[1].name[0].family
    const withAccent = family.replace(/[aeiou]/, (v) => `${v}\u0301`).normalize('NFC')
    expect(withAccent).not.toBe(family)
    const expected2 = ofType(data, 'Patient').filter(nameMatches(family))
    expect(await matchKeys(`/Patient?name=${encodeURIComponent(withAccent)}&_count=200`)).toEqual(keys(expected2))
  })
})

describe('token', () => {
  test('Patient?gender=female counts the female patients', async () => {
    const expected = ofType(data, 'Patient').filter((p) => p.gender === 'female').length
    expect((await get('/Patient?gender=female&_summary=count')).total).toBe(expected)
    expect((await get('/Patient?gender=http://hl7.org/fhir/administrative-gender|female&_total=accurate')).total).toBe(expected)
  })

  test('Observation?code=http://loinc.org|<most frequent code>&_total=accurate: total and matches equal the files', async () => {
    const code = mostFrequent(observations().flatMap((o) => (o.code?.coding ?? []).filter((c: any) => c.system === 'http://loinc.org').map((c: any) => c.code)))
    const expected = observations().filter((o) => hasCoding(o.code, 'http://loinc.org', code))
    const first = await get(`/Observation?code=http://loinc.org|${code}&_total=accurate`)
    expect(first.total).toBe(expected.length)
    expect(entries(first, 'match').length).toBe(Math.min(20, expected.length))
    expect(await matchKeys(`/Observation?code=http://loinc.org|${code}&_count=200`)).toEqual(keys(expected))
  })
})

describe('reference', () => {
  const HEIGHT = 'http://loinc.org|8302-2'

  /** The Synthea patient with the most resources of `type` matching `filter`. */
  function busiestPatient(type: string, filter: (r: any) => boolean = () => true): string {
    return mostFrequent(
      ofType(synthea, type)
        .filter(filter)
        .map((r) => r.subject?.reference),
    )
  }

  test('Observation?subject=Patient/<id>&code=<loinc> equals the observations in the files', async () => {
    const patient = busiestPatient('Observation', (o) => hasCoding(o.code, 'http://loinc.org', '8302-2'))
    const expected = observations().filter((o) => refersTo(o.subject, patient) && hasCoding(o.code, 'http://loinc.org', '8302-2'))
    expect(expected.length).toBeGreaterThan(1)
    expect(await matchKeys(`/Observation?subject=${patient}&code=${HEIGHT}`)).toEqual(keys(expected))
    expect((await get(`/Observation?subject=${patient}&code=${HEIGHT}&_summary=count`)).total).toBe(expected.length)
  })

  test('Condition?subject=Patient/<id>', async () => {
    const patient = busiestPatient('Condition')
    const expected = ofType(data, 'Condition').filter((c) => refersTo(c.subject, patient))
    expect(expected.length).toBeGreaterThan(1)
    expect(await matchKeys(`/Condition?subject=${patient}&_count=200`)).toEqual(keys(expected))
  })

  test('chain: Encounter?subject.name=<family> equals the encounters of the patients with that name', async () => {
    const family: string = syntheaPatients()[2].name[0].family
    const patients = new Set(
      ofType(data, 'Patient')
        .filter(nameMatches(family))
        .map((p) => `Patient/${p.id}`),
    )
    const expected = ofType(data, 'Encounter').filter((e) => patients.has(e.subject?.reference))
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeys(`/Encounter?subject.name=${encodeURIComponent(family)}&_count=200`)).toEqual(keys(expected))
    expect(await matchKeys(`/Encounter?subject:Patient.name=${encodeURIComponent(family)}&_count=200`)).toEqual(keys(expected))
  })

  test('_has: Patient?_has:Observation:subject:code=<code> equals the patients with such an observation', async () => {
    // a code some patients have and others not
    const byCode = new Map<string, Set<string>>()
    for (const o of ofType(synthea, 'Observation'))
      for (const c of o.code?.coding ?? []) {
        const set = byCode.get(c.code) ?? new Set<string>()
        set.add(o.subject.reference)
        byCode.set(c.code, set)
      }
    const half = syntheaPatients().length / 2
    const [code] = [...byCode.entries()].sort((a, b) => Math.abs(a[1].size - half) - Math.abs(b[1].size - half) || a[0].localeCompare(b[0]))[0]
    const referenced = new Set(
      observations()
        .filter((o) => hasCoding(o.code, undefined, code))
        .map((o) => o.subject?.reference),
    )
    const expected = ofType(data, 'Patient').filter((p) => referenced.has(`Patient/${p.id}`))
    expect(expected.length).toBeGreaterThan(0)
    expect(expected.length).toBeLessThan(ofType(data, 'Patient').length)
    expect(await matchKeys(`/Patient?_has:Observation:subject:code=${encodeURIComponent(code)}&_count=200`)).toEqual(keys(expected))
  })
})

describe('compartment', () => {
  test('Patient/<id>/Observation equals the observations whose subject (or performer) is that patient', async () => {
    const patient = syntheaPatients()[3]
    const ref = `Patient/${patient.id}`
    // the Patient CompartmentDefinition names subject and performer for Observation
    const expected = observations().filter((o) => refersTo(o.subject, ref) || (o.performer ?? []).some((p: any) => refersTo(p, ref)))
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeys(`/${ref}/Observation?_count=200`)).toEqual(keys(expected))
    expect((await get(`/${ref}/Observation?_summary=count`)).total).toBe(expected.length)
  })
})

describe('_include and _revinclude', () => {
  test('_include=Observation:subject adds the patient once per page, search.mode include, not counted in total', async () => {
    const patient = syntheaPatients()[4]
    const ref = `Patient/${patient.id}`
    const expected = observations().filter((o) => refersTo(o.subject, ref) && hasCoding(o.code, 'http://loinc.org', '8302-2'))
    expect(expected.length).toBeGreaterThan(1)
    const one = await get(`/Observation?subject=${ref}&code=http://loinc.org|8302-2&_include=Observation:subject&_total=accurate&_count=200`)
    expect(one.total).toBe(expected.length)
    expect(keys(entries(one, 'match').map((e: any) => e.resource))).toEqual(keys(expected))
    expect(keys(entries(one, 'include').map((e: any) => e.resource))).toEqual([ref])
    expect(one.entry.length).toBe(expected.length + 1)

    // includes are per page: every page of a paged search carries the patient
    const paged = await pages(`/Observation?subject=${ref}&code=http://loinc.org|8302-2&_include=Observation:subject&_count=1`)
    expect(paged.length).toBe(expected.length)
    for (const b of paged) expect(keys(entries(b, 'include').map((e: any) => e.resource))).toEqual([ref])
  })

  test('_revinclude=Observation:subject adds every observation of the patient as include entries', async () => {
    const patient = syntheaPatients()[5]
    const ref = `Patient/${patient.id}`
    const expected = observations().filter((o) => refersTo(o.subject, ref))
    expect(expected.length).toBeGreaterThan(0)
    expect(expected.length).toBeLessThanOrEqual(1000) // HAPI's maxIncludesPerPage
    const b = await get(`/Patient?_id=${patient.id}&_revinclude=Observation:subject`)
    expect(b.total).toBe(1)
    expect(keys(entries(b, 'match').map((e: any) => e.resource))).toEqual([ref])
    expect(keys(entries(b, 'include').map((e: any) => e.resource))).toEqual(keys(expected))
    expect(b.entry.every((e: any) => e.search?.mode === 'match' || e.search?.mode === 'include')).toBe(true)
  })
})

describe('system search', () => {
  test('?_type=Patient,Condition&_count=5: five entries of those types, a next link, and every match over the pages', async () => {
    const expected = [...ofType(data, 'Patient'), ...ofType(data, 'Condition')]
    const first = await get('/?_type=Patient,Condition&_count=5')
    expect(first.type).toBe('searchset')
    expect(first.entry.length).toBe(5)
    for (const e of first.entry) expect(['Patient', 'Condition']).toContain(e.resource.resourceType)
    expect(linkPath(first, 'next')).toBeDefined()
    expect((await get('/?_type=Patient,Condition&_total=accurate&_count=5')).total).toBe(expected.length)
    expect(await matchKeys('/?_type=Patient,Condition&_count=200')).toEqual(keys(expected))
  })
})

// HAPI answers `ne` on every quantity, number and date parameter (issue 22: value-quantity=ne8.9 was a
// 500); run over this data, so each predicate meets real rows (Ranges, Periods, open ends).
describe('ne on every quantity, number and date parameter', () => {
  test('200 for each, over the loaded data', async () => {
    const { searchableTypes, searchParamsFor } = await import('../shared/fhir/search/registry')
    const value: Record<string, string[]> = {
      date: ['2012-02-12', '2012-02-12T00:49:45+01:00'],
      number: ['1', '0.5'],
      quantity: ['8.9', '8.9||mg', '8.9|http://unitsofmeasure.org|mg'],
    }
    const failures: string[] = []
    for (const type of searchableTypes())
      for (const [code, def] of searchParamsFor(type))
        for (const v of value[def.type] ?? []) {
          const res = await s.fhirFetch(`/${type}?${code}=ne${encodeURIComponent(v)}&_count=2&_total=accurate`)
          if (res.status !== 200) failures.push(`${type}?${code}=ne${v}: ${res.status} ${(await res.text()).slice(0, 300)}`)
          else await res.arrayBuffer()
        }
    expect(failures).toEqual([])
  }, 120_000)
})
