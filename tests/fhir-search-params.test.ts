// Search per parameter type, modifier and prefix, on the R4 examples and a few Synthea bundles loaded
// over HTTP; expected answers computed here from the same files. https://hl7.org/fhir/R4/search.html
// (reference behaviour: shared/notes/hapi-behaviour.md §2.1-2.3, §2.6)
import { beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { type Loaded, loadR4Examples, loadSynthea, merge, ofType } from './load-data'
import { clearThreshold, dateMatches, hasCoding, keys, matchKeysOf, norm, numberEq, putOk } from './search-expect'

// Resources are loaded one by one in any order, as a bulk load: HAPI's advice is to turn referential
// integrity off for that (docs/server_jpa/performance.md).
const s = useTestServer({ ENFORCE_REFERENTIAL_INTEGRITY: 'false' })
let data: Loaded

beforeAll(async () => {
  data = merge(await loadR4Examples(s), await loadSynthea(s, 5))
}, 60_000)

const UCUM = 'http://unitsofmeasure.org'
const LOINC = 'http://loinc.org'

// --- expected answers, from the files ---------------------------------------------------------------

/** The loaded resources of a type in id order (load order varies from run to run). */
const all = (type: string) => ofType(data, type).sort((a, b) => (a.id < b.id ? -1 : 1))
const families = (p: any): string[] => (p.name ?? []).map((n: any) => n.family).filter((f: unknown) => typeof f === 'string' && f.trim() !== '')
const isRef = (ref: any, type: string, id: string) => typeof ref?.reference === 'string' && new RegExp(`^${type}/${id}(/_history/.+)?$`).test(ref.reference)

// --- HTTP -------------------------------------------------------------------------------------------

const matchKeys = (path: string) => matchKeysOf(s, path)
const put = (resource: any) => putOk(s, resource)

async function status(path: string): Promise<number> {
  const res = await s.fhirFetch(path)
  await res.arrayBuffer()
  return res.status
}

// --- string -----------------------------------------------------------------------------------------

describe('string', () => {
  test('Patient?family=Chalmers (starts-with, any case) finds Patient/example', async () => {
    const expected = all('Patient').filter((p) => families(p).some((f) => norm(f).startsWith('CHALMERS')))
    expect(keys(expected)).toContain('Patient/example')
    expect(await matchKeys('/Patient?family=Chalmers')).toEqual(keys(expected))
    expect(await matchKeys('/Patient?family=chal')).toEqual(keys(all('Patient').filter((p) => families(p).some((f) => norm(f).startsWith('CHAL')))))
  })

  test('comma is OR, repeated parameters AND', async () => {
    const or = all('Patient').filter((p) => families(p).some((f) => norm(f).startsWith('CHALMERS') || norm(f).startsWith('DONALD')))
    expect(or.length).toBeGreaterThan(1)
    expect(await matchKeys('/Patient?family=Chalmers,Donald')).toEqual(keys(or))
    const given = (p: any) => (p.name ?? []).flatMap((n: any) => n.given ?? [])
    const and = or.filter((p) => given(p).some((g: string) => norm(g).startsWith('PETER')))
    expect(await matchKeys('/Patient?family=Chalmers,Donald&given=peter')).toEqual(keys(and))
  })

  // Starts-with is an index range [prefix, next prefix) in code point order (types/string.ts startsWith).
  test('starts-with ends exactly where the prefix stops matching, beyond ASCII and beyond the BMP', async () => {
    const families = { 'pfx-1': 'ØR', 'pfx-2': 'Ørn', 'pfx-3': 'ØS', 'pfx-4': 'Þor', 'pfx-5': '𝔸bc', 'pfx-6': '𝔹', 'pfx-7': 'Ø' }
    for (const [id, family] of Object.entries(families)) await put({ resourceType: 'Patient', id, name: [{ family }] })
    expect(await matchKeys('/Patient?family=ør')).toEqual(['Patient/pfx-1', 'Patient/pfx-2'])
    expect(await matchKeys('/Patient?family=Ø')).toEqual(['Patient/pfx-1', 'Patient/pfx-2', 'Patient/pfx-3', 'Patient/pfx-7'])
    expect(await matchKeys('/Patient?family=𝔸')).toEqual(['Patient/pfx-5'])
    // gone again: other tests here compare all patients with the files
    for (const id of Object.keys(families)) expect((await s.fhirFetch(`/Patient/${id}`, { method: 'DELETE' })).status).toBe(200)
  })

  test(':exact is case- and accent-sensitive equality', async () => {
    const exact = (v: string) => all('Patient').filter((p) => families(p).includes(v))
    expect(exact('Chalmers').length).toBeGreaterThan(0)
    expect(await matchKeys('/Patient?family:exact=Chalmers')).toEqual(keys(exact('Chalmers')))
    expect(await matchKeys('/Patient?family:exact=chalmers')).toEqual(keys(exact('chalmers')))
    expect(await matchKeys('/Patient?family:exact=Chalm')).toEqual(keys(exact('Chalm')))
  })

  test('Organization?name:contains=univers matches inside name and alias', async () => {
    const expected = all('Organization').filter((o) => [o.name, ...(o.alias ?? [])].some((n) => typeof n === 'string' && norm(n).includes('UNIVERS')))
    expect(expected.length).toBeGreaterThan(0)
    expect(expected.some((o) => !norm(o.name ?? '').startsWith('UNIVERS'))).toBe(true)
    expect(await matchKeys('/Organization?name:contains=univers')).toEqual(keys(expected))
  })

  test(':missing=true and :missing=false on family partition the patients', async () => {
    const without = all('Patient').filter((p) => families(p).length === 0)
    const withFamily = all('Patient').filter((p) => families(p).length > 0)
    expect(without.length).toBeGreaterThan(0)
    expect(await matchKeys('/Patient?family:missing=true')).toEqual(keys(without))
    expect(await matchKeys('/Patient?family:missing=false')).toEqual(keys(withFamily))
  })
})

// --- token ------------------------------------------------------------------------------------------

describe('token', () => {
  const identifiers = (p: any) => (p.identifier ?? []) as any[]

  test('Patient?identifier=urn:oid:1.2.36.146.595.217.0.1|12345 finds Patient/example; code alone matches any system', async () => {
    const system = 'urn:oid:1.2.36.146.595.217.0.1'
    const bySystem = all('Patient').filter((p) => identifiers(p).some((i) => i.system === system && i.value === '12345'))
    expect(keys(bySystem)).toEqual(['Patient/example'])
    expect(await matchKeys(`/Patient?identifier=${system}|12345`)).toEqual(keys(bySystem))
    const anySystem = all('Patient').filter((p) => identifiers(p).some((i) => i.value === '12345'))
    expect(anySystem.length).toBeGreaterThan(1)
    expect(await matchKeys('/Patient?identifier=12345')).toEqual(keys(anySystem))
    const inSystem = all('Patient').filter((p) => identifiers(p).some((i) => i.system === system))
    expect(await matchKeys(`/Patient?identifier=${system}|`)).toEqual(keys(inSystem))
    const noSystem = all('Patient').filter((p) => identifiers(p).some((i) => i.system === undefined && i.value === 'AB60001'))
    expect(noSystem.length).toBe(1)
    expect(await matchKeys('/Patient?identifier=|AB60001')).toEqual(keys(noSystem))
  })

  test('Observation?code=http://loinc.org|15074-8', async () => {
    const expected = all('Observation').filter((o) => hasCoding(o.code, LOINC, '15074-8'))
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeys(`/Observation?code=${LOINC}|15074-8`)).toEqual(keys(expected))
  })

  test(':not also matches resources without the element (Patient?gender:not=male)', async () => {
    const expected = all('Patient').filter((p) => p.gender !== 'male')
    expect(expected.some((p) => p.gender === undefined)).toBe(true)
    expect(await matchKeys('/Patient?gender:not=male')).toEqual(keys(expected))
  })

  test('boolean: Patient?active=true', async () => {
    const expected = all('Patient').filter((p) => p.active === true)
    expect(await matchKeys('/Patient?active=true')).toEqual(keys(expected))
  })

  test(':text is starts-with on the display and text of the concept', async () => {
    const texts = (cc: any) => [cc?.text, ...(cc?.coding ?? []).map((c: any) => c.display)].filter((t) => typeof t === 'string')
    const expected = all('Observation').filter((o) => texts(o.code).some((t) => norm(t).startsWith('GLUCOSE')))
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeys('/Observation?code:text=glucose')).toEqual(keys(expected))
  })
})

// --- reference, uri, specials -------------------------------------------------------------------------

describe('reference', () => {
  test('Observation?subject=Patient/example, subject:Patient=example and patient=example agree', async () => {
    const expected = all('Observation').filter((o) => isRef(o.subject, 'Patient', 'example'))
    expect(expected.length).toBeGreaterThan(1)
    expect(await matchKeys('/Observation?subject=Patient/example')).toEqual(keys(expected))
    expect(await matchKeys('/Observation?subject:Patient=example')).toEqual(keys(expected))
    expect(await matchKeys('/Observation?patient=example')).toEqual(keys(expected))
  })
})

describe('uri', () => {
  test('Questionnaire?url= exact, :below by prefix', async () => {
    const url = 'http://hl7.org/fhir/Questionnaire/bb'
    expect(await matchKeys(`/Questionnaire?url=${url}`)).toEqual(keys(all('Questionnaire').filter((q) => q.url === url)))
    expect(await matchKeys('/Questionnaire?url=http://hl7.org/fhir/Questionnaire')).toEqual([])
    const prefix = 'http://hl7.org/fhir/Questionnaire/'
    const below = all('Questionnaire').filter((q) => typeof q.url === 'string' && q.url.startsWith(prefix))
    expect(below.length).toBeGreaterThan(1)
    expect(await matchKeys(`/Questionnaire?url:below=${prefix}`)).toEqual(keys(below))
  })

  test('ValueSet?url= finds a ValueSet put with that url; :above finds it from a longer url', async () => {
    const url = 'http://example.org/fhir/ValueSet/search-test'
    await put({ resourceType: 'ValueSet', id: 'search-test', url, status: 'active' })
    await put({ resourceType: 'ValueSet', id: 'search-test-2', url: `${url}-2`, status: 'active' })
    expect(await matchKeys(`/ValueSet?url=${url}`)).toEqual(['ValueSet/search-test'])
    expect(await matchKeys(`/ValueSet?url:above=${url}/v1`)).toEqual(['ValueSet/search-test'])
    expect(await matchKeys(`/ValueSet?url:below=${url}`)).toEqual(['ValueSet/search-test', 'ValueSet/search-test-2'])
  })
})

describe('special parameters', () => {
  test('_id, with OR and ids that do not exist', async () => {
    const ids = ['example', 'pat1', 'no-such-patient']
    const expected = all('Patient').filter((p) => ids.includes(p.id))
    expect(expected.length).toBe(2)
    expect(await matchKeys(`/Patient?_id=${ids.join(',')}`)).toEqual(keys(expected))
  })

  test('_profile on the loaded resources with meta.profile', async () => {
    const profile = 'http://hl7.org/fhir/StructureDefinition/vitalsigns'
    const expected = all('Observation').filter((o) => (o.meta?.profile ?? []).includes(profile))
    expect(expected.length).toBeGreaterThan(1)
    expect(await matchKeys(`/Observation?_profile=${profile}`)).toEqual(keys(expected))
  })

  test('_security on the loaded resource with meta.security', async () => {
    const expected = all('Condition').filter((c) => (c.meta?.security ?? []).some((t: any) => t.code === 'TBOO'))
    expect(expected.length).toBe(1)
    expect(await matchKeys('/Condition?_security=http://terminology.hl7.org/CodeSystem/v3-ActCode|TBOO')).toEqual(keys(expected))
  })

  test('_tag, and _tag:not', async () => {
    const tag = { system: 'http://example.org/fhir/tags', code: 'search-test' }
    await put({ resourceType: 'Patient', id: 'tag-a', meta: { tag: [tag] }, name: [{ family: 'Tagtest' }] })
    await put({ resourceType: 'Patient', id: 'tag-b', meta: { tag: [tag, { system: tag.system, code: 'other' }] }, name: [{ family: 'Tagtest' }] })
    await put({ resourceType: 'Patient', id: 'tag-c', meta: { tag: [{ system: tag.system, code: 'other' }] }, name: [{ family: 'Tagtest' }] })
    await put({ resourceType: 'Patient', id: 'tag-d', name: [{ family: 'Tagtest' }] })
    expect(await matchKeys(`/Patient?_tag=${tag.system}|${tag.code}`)).toEqual(['Patient/tag-a', 'Patient/tag-b'])
    expect(await matchKeys(`/Patient?_tag=${tag.code}`)).toEqual(['Patient/tag-a', 'Patient/tag-b'])
    expect(await matchKeys(`/Patient?family=Tagtest&_tag:not=${tag.system}|${tag.code}`)).toEqual(['Patient/tag-c', 'Patient/tag-d'])
  })
})

// --- date, number, quantity, composite ------------------------------------------------------------------

describe('date', () => {
  const withBirthDate = () => all('Patient').filter((p) => typeof p.birthDate === 'string')

  for (const prefix of ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb']) {
    test(`Patient?birthdate=${prefix}<Patient/example's birth date>`, async () => {
      const example = all('Patient').find((p) => p.id === 'example')
      const param = `${prefix}${example.birthDate}`
      // only patients with a birth date: every prefix, ne too, compares indexed values (HAPI joins the date index)
      const expected = withBirthDate().filter((p) => dateMatches(p.birthDate, param))
      expect(expected.length).toBeGreaterThan(0)
      expect(await matchKeys(`/Patient?birthdate=${param}`)).toEqual(keys(expected))
    })
  }

  test('a year covers the whole year; AND of two bounds is a range', async () => {
    const year = all('Patient')
      .find((p) => p.id === 'example')
      .birthDate.slice(0, 4)
    expect(await matchKeys(`/Patient?birthdate=${year}`)).toEqual(keys(withBirthDate().filter((p) => p.birthDate.startsWith(year))))
    const range = withBirthDate().filter((p) => dateMatches(p.birthDate, 'ge1950-01-01') && dateMatches(p.birthDate, 'lt1970'))
    expect(range.length).toBeGreaterThan(0)
    expect(await matchKeys('/Patient?birthdate=ge1950-01-01&birthdate=lt1970')).toEqual(keys(range))
  })

  test('Observation?subject=<Synthea patient>&date=ge2015-01-01 on dateTimes with zones', async () => {
    const obs = all('Observation').filter((o) => typeof o.subject?.reference === 'string' && /^Patient\/[0-9a-f-]{36}$/.test(o.subject.reference))
    const subject = obs[0].subject.reference
    const mine = obs.filter((o) => o.subject.reference === subject)
    expect(mine.every((o) => typeof o.effectiveDateTime === 'string')).toBe(true)
    const expected = mine.filter((o) => dateMatches(o.effectiveDateTime, 'ge2015-01-01'))
    expect(expected.length).toBeGreaterThan(0)
    expect(expected.length).toBeLessThan(mine.length)
    expect(await matchKeys(`/Observation?subject=${subject}&date=ge2015-01-01`)).toEqual(keys(expected))
  })

  test('_lastUpdated=gt<instant> finds exactly what was written after it', async () => {
    const marker = await put({ resourceType: 'Patient', id: 'updated-marker', name: [{ family: 'Lastupdated' }] })
    await Bun.sleep(5)
    const a = await put({ resourceType: 'Patient', id: 'updated-a', name: [{ family: 'Lastupdated' }] })
    const b = await put({ resourceType: 'Basic', id: 'updated-b', code: { text: 'x' } })
    expect(await matchKeys(`/Patient?_lastUpdated=gt${marker.meta.lastUpdated}`)).toEqual([`Patient/${a.id}`])
    expect(await matchKeys(`/Basic?_lastUpdated=gt${marker.meta.lastUpdated}`)).toEqual([`Basic/${b.id}`])
    expect(await matchKeys(`/Patient?family=Lastupdated&_lastUpdated=le${marker.meta.lastUpdated}`)).toEqual(['Patient/updated-marker'])
  })

  test('a malformed date or an unknown prefix is 400', async () => {
    expect(await status('/Patient?birthdate=ge1974-13-01')).toBe(400)
    expect(await status('/Patient?birthdate=xx1974')).toBe(400)
    expect(await status('/Patient?birthdate=yesterday')).toBe(400)
  })
})

describe('number', () => {
  const probabilities = (r: any): number[] => (r.prediction ?? []).map((p: any) => p.probabilityDecimal).filter((v: unknown) => typeof v === 'number')

  test('RiskAssessment?probability=gt / lt', async () => {
    const values = all('RiskAssessment').flatMap(probabilities)
    const gt = clearThreshold(values, 0.001, 3)
    const gtExpected = all('RiskAssessment').filter((r) => probabilities(r).some((v) => v > Number(gt)))
    expect(gtExpected.length).toBeGreaterThan(0)
    expect(await matchKeys(`/RiskAssessment?probability=gt${gt}`)).toEqual(keys(gtExpected))
    const lt = clearThreshold(values, 0.0001, 4)
    const ltExpected = all('RiskAssessment').filter((r) => probabilities(r).some((v) => v < Number(lt)))
    expect(ltExpected.length).toBeGreaterThan(0)
    expect(await matchKeys(`/RiskAssessment?probability=lt${lt}`)).toEqual(keys(ltExpected))
  })

  test('eq uses the implicit precision of the value (0.02 is [0.015, 0.025))', async () => {
    const expected = all('RiskAssessment').filter((r) => probabilities(r).some((v) => numberEq(v, '0.02')))
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeys('/RiskAssessment?probability=0.02')).toEqual(keys(expected))
    expect(await matchKeys('/RiskAssessment?probability=eq0.02')).toEqual(keys(expected))
  })

  test('MolecularSequence?variant-start=lt10 and an AND range', async () => {
    const starts = (m: any): number[] => (m.variant ?? []).map((v: any) => v.start).filter((v: unknown) => typeof v === 'number')
    expect(await matchKeys('/MolecularSequence?variant-start=lt10')).toEqual(keys(all('MolecularSequence').filter((m) => starts(m).some((v) => v < 10))))
    const range = all('MolecularSequence').filter((m) => starts(m).some((v) => v >= 13116) && starts(m).some((v) => v <= 18139214))
    expect(range.length).toBeGreaterThan(0)
    expect(await matchKeys('/MolecularSequence?variant-start=ge13116&variant-start=le18139214')).toEqual(keys(range))
  })

  test('a malformed number or prefix is 400', async () => {
    expect(await status('/RiskAssessment?probability=gtabc')).toBe(400)
    expect(await status('/RiskAssessment?probability=zz0.5')).toBe(400)
  })
})

describe('quantity', () => {
  const mgdl = (o: any) => o.valueQuantity?.system === UCUM && o.valueQuantity?.code === 'mg/dL' && typeof o.valueQuantity.value === 'number'
  const threshold = () =>
    clearThreshold(
      all('Observation')
        .filter(mgdl)
        .map((o) => o.valueQuantity.value),
    )

  test('Observation?value-quantity=gt<n>|http://unitsofmeasure.org|mg/dL', async () => {
    const t = threshold()
    const expected = all('Observation').filter((o) => mgdl(o) && o.valueQuantity.value > Number(t))
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeys(`/Observation?value-quantity=gt${t}|${UCUM}|mg/dL`)).toEqual(keys(expected))
  })

  test('value-quantity=lt<n>||mg/dL (any system, the unit code) and value-quantity=<n> with no unit', async () => {
    const t = threshold()
    const expected = all('Observation').filter(
      (o) => (o.valueQuantity?.code === 'mg/dL' || o.valueQuantity?.unit === 'mg/dL') && o.valueQuantity.value < Number(t),
    )
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeys(`/Observation?value-quantity=lt${t}||mg/dL`)).toEqual(keys(expected))
    const search = all('Observation').filter(mgdl)[0].valueQuantity.value.toFixed(1)
    const eq = all('Observation').filter((o) => typeof o.valueQuantity?.value === 'number' && numberEq(o.valueQuantity.value, search))
    expect(eq.length).toBeGreaterThan(0)
    expect(await matchKeys(`/Observation?value-quantity=${search}`)).toEqual(keys(eq))
  })
})

describe('composite', () => {
  test('Observation?code-value-quantity=http://loinc.org|2339-0$gt<n>', async () => {
    const glucose = all('Observation').filter((o) => hasCoding(o.code, LOINC, '2339-0') && typeof o.valueQuantity?.value === 'number')
    expect(glucose.length).toBeGreaterThan(1)
    const t = clearThreshold(glucose.map((o) => o.valueQuantity.value))
    const expected = glucose.filter((o) => o.valueQuantity.value > Number(t))
    expect(expected.length).toBeGreaterThan(0)
    expect(expected.length).toBeLessThan(glucose.length)
    expect(await matchKeys(`/Observation?code-value-quantity=${LOINC}|2339-0$gt${t}`)).toEqual(keys(expected))
    expect(await matchKeys(`/Observation?code-value-quantity=${LOINC}|2339-0$gt${t}|${UCUM}|mg/dL`)).toEqual(
      keys(expected.filter((o) => o.valueQuantity.system === UCUM && o.valueQuantity.code === 'mg/dL')),
    )
  })

  test('components must come from the same Observation.component (component-code-value-quantity)', async () => {
    const systolic = '8480-6'
    const comps = (o: any) => (o.component ?? []) as any[]
    const bp = all('Observation').filter((o) => comps(o).some((c) => hasCoding(c.code, LOINC, systolic) && typeof c.valueQuantity?.value === 'number'))
    expect(bp.length).toBeGreaterThan(1)
    const values = bp.flatMap((o) =>
      comps(o)
        .map((c) => c.valueQuantity?.value)
        .filter((v: unknown) => typeof v === 'number'),
    )
    const t = clearThreshold(values)
    const expected = bp.filter((o) => comps(o).some((c) => hasCoding(c.code, LOINC, systolic) && c.valueQuantity?.value > Number(t)))
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeys(`/Observation?component-code-value-quantity=${LOINC}|${systolic}$gt${t}`)).toEqual(keys(expected))
  })
})
