// Searches that follow references: chains (`subject:Patient.organization.name=`), `_has` and
// compartments (`Patient/{id}/Observation`), on small sets of resources written here, so that every
// expected answer is known. https://hl7.org/fhir/R4/search.html#chaining
import { describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { matchKeysOf, pagedMatchKeys, putOk } from './search-expect'

// References may point at resources written later in a test.
const s = useTestServer({ ENFORCE_REFERENTIAL_INTEGRITY: 'false' })
const LOINC = 'http://loinc.org'
const matchKeys = (path: string) => matchKeysOf(s, path)
const put = (resource: any) => putOk(s, resource)

describe('chains', () => {
  test('one to three links, several target types, typed links, AND of two chains, with other criteria and paging', async () => {
    await put({ resourceType: 'Organization', id: 'ch-parent', name: 'Chainparent' })
    await put({ resourceType: 'Organization', id: 'ch-a', name: 'Chainorg Alpha', partOf: { reference: 'Organization/ch-parent' } })
    await put({ resourceType: 'Organization', id: 'ch-b', name: 'Chainorg Beta' })
    await put({ resourceType: 'Patient', id: 'ch-p1', name: [{ family: 'Chainfam' }], managingOrganization: { reference: 'Organization/ch-a' } })
    await put({ resourceType: 'Patient', id: 'ch-p2', name: [{ family: 'Chainfam' }], managingOrganization: { reference: 'Organization/ch-b' } })
    await put({ resourceType: 'Patient', id: 'ch-p3', name: [{ family: 'Otherfam' }], managingOrganization: { reference: 'Organization/ch-a' } })
    await put({ resourceType: 'Location', id: 'ch-l1', name: 'Chainfam clinic' })
    const obs = (id: string, subject: string, code: string) =>
      put({ resourceType: 'Observation', id, status: 'final', code: { coding: [{ system: LOINC, code }] }, subject: { reference: subject } })
    await obs('ch-o1', 'Patient/ch-p1', 'ch-x')
    await obs('ch-o2', 'Patient/ch-p2', 'ch-x')
    await obs('ch-o3', 'Patient/ch-p3', 'ch-x')
    await obs('ch-o4', 'Location/ch-l1', 'ch-x')
    await obs('ch-o5', 'Patient/ch-p1', 'ch-y')
    // subject is Patient | Group | Device | Location: `name` exists on Patient and Location
    expect(await matchKeys('/Observation?subject.name=Chainfam')).toEqual(['Observation/ch-o1', 'Observation/ch-o2', 'Observation/ch-o4', 'Observation/ch-o5'])
    expect(await matchKeys('/Observation?subject:Patient.name=Chainfam')).toEqual(['Observation/ch-o1', 'Observation/ch-o2', 'Observation/ch-o5'])
    expect(await matchKeys('/Observation?subject:Location.name=Chainfam')).toEqual(['Observation/ch-o4'])
    expect(await matchKeys(`/Observation?subject:Patient.name=Chainfam&code=${LOINC}|ch-x`)).toEqual(['Observation/ch-o1', 'Observation/ch-o2'])
    expect(await matchKeys('/Observation?subject:Patient.organization.name=Chainorg Alpha')).toEqual([
      'Observation/ch-o1',
      'Observation/ch-o3',
      'Observation/ch-o5',
    ])
    expect(await matchKeys('/Observation?subject:Patient.organization.partof.name=Chainparent')).toEqual([
      'Observation/ch-o1',
      'Observation/ch-o3',
      'Observation/ch-o5',
    ])
    expect(await matchKeys('/Observation?subject:Patient.name=Chainfam&subject:Patient.organization.name=Chainorg Beta')).toEqual(['Observation/ch-o2'])
    expect(await matchKeys('/Observation?subject:Patient.name=Nosuchfamily')).toEqual([])
    // one per page, to the end
    expect(await pagedMatchKeys(s, '/Observation?subject.name=Chainfam&_count=1')).toEqual([
      'Observation/ch-o1',
      'Observation/ch-o2',
      'Observation/ch-o4',
      'Observation/ch-o5',
    ])
    // _has the other way: patients with an observation of code ch-y
    expect(await matchKeys(`/Patient?_has:Observation:subject:code=${LOINC}|ch-y`)).toEqual(['Patient/ch-p1'])
    expect(await matchKeys(`/Patient?_has:Observation:subject:code=${LOINC}|ch-x&name=Chainfam`)).toEqual(['Patient/ch-p1', 'Patient/ch-p2'])
  })
})

describe('compartment', () => {
  test('Patient/<id>/<type> follows exactly the parameters the compartment names, with other criteria and paging', async () => {
    await put({ resourceType: 'Patient', id: 'cmp-p' })
    await put({ resourceType: 'Patient', id: 'cmp-other' })
    // Condition: patient (subject) and asserter are compartment parameters
    await put({ resourceType: 'Condition', id: 'cmp-c1', subject: { reference: 'Patient/cmp-p' }, code: { text: 'a' } })
    await put({ resourceType: 'Condition', id: 'cmp-c2', subject: { reference: 'Patient/cmp-other' }, asserter: { reference: 'Patient/cmp-p' } })
    await put({ resourceType: 'Condition', id: 'cmp-c3', subject: { reference: 'Patient/cmp-other' } })
    // Observation: subject and performer are; focus is not
    await put({
      resourceType: 'Observation',
      id: 'cmp-o1',
      status: 'final',
      code: { coding: [{ system: LOINC, code: 'cmp-1' }] },
      subject: { reference: 'Patient/cmp-p' },
    })
    await put({
      resourceType: 'Observation',
      id: 'cmp-o2',
      status: 'final',
      code: { coding: [{ system: LOINC, code: 'cmp-2' }] },
      performer: [{ reference: 'Patient/cmp-p' }],
    })
    await put({
      resourceType: 'Observation',
      id: 'cmp-o3',
      status: 'final',
      code: { coding: [{ system: LOINC, code: 'cmp-1' }] },
      focus: [{ reference: 'Patient/cmp-p' }],
    })
    expect(await matchKeys('/Patient/cmp-p/Condition')).toEqual(['Condition/cmp-c1', 'Condition/cmp-c2'])
    expect(await matchKeys('/Patient/cmp-other/Condition')).toEqual(['Condition/cmp-c2', 'Condition/cmp-c3'])
    expect(await matchKeys('/Patient/cmp-p/Observation')).toEqual(['Observation/cmp-o1', 'Observation/cmp-o2'])
    expect(await matchKeys(`/Patient/cmp-p/Observation?code=${LOINC}|cmp-1`)).toEqual(['Observation/cmp-o1'])
    expect(await matchKeys('/Patient/cmp-p/Patient')).toEqual(['Patient/cmp-p'])
    // one per page, to the end
    expect(await pagedMatchKeys(s, '/Patient/cmp-p/Observation?_count=1')).toEqual(['Observation/cmp-o1', 'Observation/cmp-o2'])
  })
})
