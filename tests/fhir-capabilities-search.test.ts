// GET /metadata, the search part: per type every supported search parameter (name, type, definition,
// documentation with its modifiers), searchInclude / searchRevInclude, search and conditional
// interactions, as HAPI's JpaCapabilityStatementProvider lists them (shared/notes/hapi-behaviour.md §1.6).
// https://hl7.org/fhir/R4/capabilitystatement.html
import { beforeAll, describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'

const s = useTestServer()

let cs: any
const resourceOf = (type: string) => cs.rest[0].resource.find((r: any) => r.type === type)
const paramOf = (type: string, name: string) => resourceOf(type).searchParam.find((p: any) => p.name === name)

beforeAll(async () => {
  const res = await s.fhirFetch('/metadata')
  expect(res.status).toBe(200)
  cs = await readJson(res)
})

describe('searchParam', () => {
  test('Patient lists its R4 parameters with name, type, definition and documentation', () => {
    expect(paramOf('Patient', 'identifier')).toMatchObject({
      type: 'token',
      definition: 'http://hl7.org/fhir/SearchParameter/Patient-identifier',
    })
    expect(paramOf('Patient', 'identifier').documentation).toStartWith('A patient identifier.')
    expect(paramOf('Patient', 'name')).toMatchObject({ type: 'string', definition: 'http://hl7.org/fhir/SearchParameter/Patient-name' })
    expect(paramOf('Patient', 'general-practitioner')).toMatchObject({ type: 'reference' })
    expect(paramOf('Patient', 'birthdate')).toMatchObject({ type: 'date' })
    expect(paramOf('Patient', 'active')).toMatchObject({ type: 'token' })
    for (const p of resourceOf('Patient').searchParam) {
      expect(typeof p.name).toBe('string')
      expect(typeof p.type).toBe('string')
      expect(typeof p.definition).toBe('string')
      expect(p.documentation).toContain('Modifiers: ')
    }
  })

  test('the common parameters are listed for every type; _type, _filter and _query are not', () => {
    for (const r of cs.rest[0].resource) {
      const names = new Set(r.searchParam.map((p: any) => p.name))
      expect(names.size).toBe(r.searchParam.length)
      for (const common of ['_id', '_lastUpdated', '_tag', '_profile', '_security', '_source', '_content', '_has', '_list'])
        expect({ type: r.type, common, listed: names.has(common) }).toEqual({ type: r.type, common, listed: true })
      for (const absent of ['_type', '_filter', '_query']) expect(names.has(absent)).toBe(false)
    }
    // _text is a DomainResource parameter: Bundle, Binary and Parameters derive from Resource
    expect(paramOf('Patient', '_text')).toMatchObject({ type: 'string' })
    expect(paramOf('Bundle', '_text')).toBeUndefined()
    expect(paramOf('Patient', '_lastUpdated')).toMatchObject({ type: 'date', definition: 'http://hl7.org/fhir/SearchParameter/Resource-lastUpdated' })
  })

  test('a description shared by several types is cut to the line for this type', () => {
    expect(paramOf('Observation', 'code').documentation).toStartWith('The code of the observation type.')
    expect(paramOf('Condition', 'code').documentation).toStartWith('Code for the condition.')
    expect(paramOf('Observation', 'code').documentation).not.toContain('Multiple Resources')
  })

  test('all parameter types appear: string, token, reference, uri, date, number, quantity, composite, special', () => {
    const types = new Set(cs.rest[0].resource.flatMap((r: any) => r.searchParam.map((p: any) => p.type)))
    for (const t of ['string', 'token', 'reference', 'uri', 'date', 'number', 'quantity', 'composite', 'special']) expect(types.has(t)).toBe(true)
    expect(paramOf('Observation', 'value-quantity')).toMatchObject({ type: 'quantity' })
    expect(paramOf('Observation', 'code-value-quantity')).toMatchObject({ type: 'composite' })
    expect(paramOf('RiskAssessment', 'probability')).toMatchObject({ type: 'number' })
    expect(paramOf('ValueSet', 'url')).toMatchObject({ type: 'uri' })
    // a special parameter the engine does not serve (Location near) is not advertised
    expect(paramOf('Location', 'near')).toBeUndefined()
  })

  test('documentation names the modifiers each parameter type accepts', () => {
    expect(paramOf('Patient', 'name').documentation).toEndWith('Modifiers: :exact, :contains, :missing.')
    expect(paramOf('Patient', 'identifier').documentation).toEndWith('Modifiers: :not, :text, :in, :not-in, :above, :below, :missing.')
    expect(paramOf('ValueSet', 'url').documentation).toEndWith('Modifiers: :above, :below, :missing.')
    const ref = paramOf('Observation', 'subject').documentation
    for (const m of [':[type]', ':identifier', ':missing', 'chaining']) expect(ref).toContain(m)
    expect(paramOf('Patient', '_id').documentation).toEndWith('Modifiers: :not, :missing.')
    expect(paramOf('Patient', 'birthdate').documentation).toEndWith('Modifiers: :missing.')
    expect(paramOf('Observation', 'code-value-quantity').documentation).toEndWith('Modifiers: none.')
  })

  // The listing against the engine: every advertised string/token/uri/reference parameter of Patient and
  // Observation, and each advertised string modifier, is accepted by a search.
  test('every advertised string, token, uri and reference parameter of Patient and Observation is searchable', async () => {
    const sample: Record<string, string> = { string: 'x', token: 'x', uri: 'http://example.org/x', reference: 'Patient/x' }
    for (const type of ['Patient', 'Observation']) {
      for (const p of resourceOf(type).searchParam) {
        if (!(p.type in sample) || p.name.startsWith('_')) continue
        const res = await s.fhirFetch(`/${type}?${encodeURIComponent(p.name)}=${encodeURIComponent(sample[p.type])}&_count=1`)
        expect({ type, param: p.name, status: res.status }).toEqual({ type, param: p.name, status: 200 })
      }
    }
    for (const m of ['exact', 'contains', 'missing']) {
      const res = await s.fhirFetch(`/Patient?name:${m}=${m === 'missing' ? 'true' : 'x'}`)
      expect({ m, status: res.status }).toEqual({ m, status: 200 })
    }
  })
})

describe('searchInclude and searchRevInclude', () => {
  test('searchInclude: * and Type:param for each reference parameter of the type', () => {
    expect(resourceOf('Patient').searchInclude).toEqual(['*', 'Patient:general-practitioner', 'Patient:link', 'Patient:organization'])
    const obs = resourceOf('Observation').searchInclude
    for (const v of ['*', 'Observation:subject', 'Observation:patient', 'Observation:encounter', 'Observation:performer']) expect(obs).toContain(v)
    expect(obs).not.toContain('Observation:code')
  })

  test('searchRevInclude: * and Source:param of the parameters that can point at the type', () => {
    const patient = resourceOf('Patient').searchRevInclude
    for (const v of ['*', 'Observation:subject', 'Observation:patient', 'Encounter:subject', 'Patient:link']) expect(patient).toContain(v)
    const org = resourceOf('Organization').searchRevInclude
    expect(org).toContain('Patient:organization')
    expect(org).not.toContain('Observation:patient') // Observation.patient targets Patient only
    expect(org).not.toContain('Observation:code')
  })

  test('every advertised searchInclude of Patient and Observation is accepted', async () => {
    for (const type of ['Patient', 'Observation']) {
      for (const v of resourceOf(type).searchInclude) {
        const res = await s.fhirFetch(`/${type}?_include=${encodeURIComponent(v)}&_count=1`)
        expect({ type, include: v, status: res.status }).toEqual({ type, include: v, status: 200 })
      }
    }
  })
})

describe('interactions', () => {
  test('every type: search-type, conditional create and update, conditionalDelete single', () => {
    for (const r of cs.rest[0].resource) {
      expect(r.interaction.map((i: any) => i.code)).toContain('search-type')
      expect({ type: r.type, c: r.conditionalCreate, u: r.conditionalUpdate, d: r.conditionalDelete }).toEqual({ type: r.type, c: true, u: true, d: 'single' })
    }
  })

  test('system level: search-system and history-system', () => {
    const codes = cs.rest[0].interaction.map((i: any) => i.code)
    expect(codes).toContain('search-system')
    expect(codes).toContain('history-system')
  })

  test('built once: a second request answers the same statement', async () => {
    const again = await readJson(await s.fhirFetch('/metadata'))
    expect(again.date).toBe(cs.date)
    expect(again).toEqual(cs)
  })
})
