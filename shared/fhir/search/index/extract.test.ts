// Index rows of whole resources: every parameter of the type evaluated, rows deduplicated, each with its code.
import { describe, expect, test } from 'bun:test'
import { type IndexRows, type IndexType, extractIndexes } from './extract'
import { DATE_MAX, DAY_MAX } from '../types/date'
import { searchParamFor, unionMembers } from '../registry'

const BASE = 'https://fhir.example.org/fhir'

/** The rows of one parameter, without the code (every row of a code carries it). */
function rowsOf(rows: IndexRows, type: IndexType, code: string): any[] {
  return (rows[type] as any[]).filter((r) => r.code === code).map(({ code: _, ...rest }) => rest)
}

const ref = (targetType: string | null, targetId: string | null, version: string | null = null, url: string | null = null) => ({
  targetType,
  targetId,
  version,
  url,
  identifierSystem: null,
  identifierValue: null,
})

const patient = {
  resourceType: 'Patient',
  id: 'p1',
  meta: {
    tag: [{ system: 'https://smarthealthit.org/tags', code: 'synthea-5-2019' }],
    security: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality', code: 'R' }],
    profile: ['http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient'],
    source: 'http://source.example.org#req-1',
  },
  identifier: [
    { system: 'https://github.com/synthetichealth/synthea', value: 'a39449f8' },
    {
      type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'MR' }], text: 'Medical Record Number' },
      system: 'http://hospital.smarthealthit.org',
      value: 'a39449f8',
    },
  ],
  name: [
    { use: 'official', family: 'Pérez', given: ['José', 'Luis'], prefix: ['Mr.'] },
    { use: 'nickname', given: ['Pepe'] },
  ],
  gender: 'male',
  birthDate: '1983-10-09',
  active: true,
  generalPractitioner: [
    { reference: `${BASE}/Practitioner/pr1` },
    { reference: 'Organization/o1/_history/4' },
    { reference: 'http://other.example.org/fhir/Practitioner/9' },
  ],
}

describe('extractIndexes: Patient', () => {
  const rows = extractIndexes(patient, { baseUrl: BASE })

  test('name and its parts (string, normalised)', () => {
    expect(rowsOf(rows, 'string', 'name')).toEqual([
      { value_norm: 'PEREZ', value_exact: 'Pérez' },
      { value_norm: 'JOSE', value_exact: 'José' },
      { value_norm: 'LUIS', value_exact: 'Luis' },
      { value_norm: 'MR.', value_exact: 'Mr.' },
      { value_norm: 'PEPE', value_exact: 'Pepe' },
    ])
    expect(rowsOf(rows, 'string', 'family')).toEqual([{ value_norm: 'PEREZ', value_exact: 'Pérez' }])
    expect(rowsOf(rows, 'string', 'given')).toEqual([
      { value_norm: 'JOSE', value_exact: 'José' },
      { value_norm: 'LUIS', value_exact: 'Luis' },
      { value_norm: 'PEPE', value_exact: 'Pepe' },
    ])
  })

  test('birthdate as the day it covers', () => {
    expect(rowsOf(rows, 'date', 'birthdate')).toEqual([
      { lo: '1983-10-09T00:00:00.000Z', hi: '1983-10-09T23:59:59.999Z', loDay: '1983-10-09', hiDay: '1983-10-09' },
    ])
  })

  test('gender with the system of its required binding, active as a boolean token', () => {
    expect(rowsOf(rows, 'token', 'gender')).toEqual([{ system: 'http://hl7.org/fhir/administrative-gender', value: 'male', text: null }])
    expect(rowsOf(rows, 'token', 'active')).toEqual([{ system: null, value: 'true', text: null }])
    expect(rowsOf(rows, 'token', 'deceased')).toEqual([{ system: null, value: 'false', text: null }])
  })

  test('identifier with the type text for :text', () => {
    expect(rowsOf(rows, 'token', 'identifier')).toEqual([
      { system: 'https://github.com/synthetichealth/synthea', value: 'a39449f8', text: null },
      { system: 'http://hospital.smarthealthit.org', value: 'a39449f8', text: 'MEDICAL RECORD NUMBER' },
    ])
  })

  test('general-practitioner: absolute URL on the base is local, _history keeps the version, other servers keep the URL', () => {
    expect(rowsOf(rows, 'reference', 'general-practitioner')).toEqual([
      ref('Practitioner', 'pr1'),
      ref('Organization', 'o1', '4'),
      ref(null, null, null, 'http://other.example.org/fhir/Practitioner/9'),
    ])
  })

  test('_tag, _security, _profile, _source from meta; _id and _lastUpdated give no rows', () => {
    expect(rowsOf(rows, 'token', '_tag')).toEqual([{ system: 'https://smarthealthit.org/tags', value: 'synthea-5-2019', text: null }])
    expect(rowsOf(rows, 'token', '_security')).toEqual([{ system: 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality', value: 'R', text: null }])
    expect(rowsOf(rows, 'uri', '_profile')).toEqual([{ value: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient' }])
    expect(rowsOf(rows, 'uri', '_source')).toEqual([{ value: 'http://source.example.org#req-1' }])
    expect(rowsOf(rows, 'token', '_id')).toEqual([])
    expect(rowsOf(rows, 'date', '_lastUpdated')).toEqual([])
  })
})

const loinc = (code: string, display: string) => ({ coding: [{ system: 'http://loinc.org', code, display }], text: display })

const observation = {
  resourceType: 'Observation',
  id: 'o1',
  status: 'final',
  category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }],
  code: loinc('8302-2', 'Body Height'),
  subject: { reference: 'Patient/p1' },
  encounter: { reference: 'urn:uuid:a850debc-8295-499c-bf2d-f58a85b8a9f2' },
  effectivePeriod: { start: '2011-11-21T03:43:05-05:00', end: '2011-11-21' },
  valueQuantity: { value: 168.2, unit: 'cm', system: 'http://unitsofmeasure.org', code: 'cm' },
}

describe('extractIndexes: Observation', () => {
  const rows = extractIndexes(observation, { baseUrl: BASE })
  const height = { system: 'http://loinc.org', value: '8302-2', text: 'BODY HEIGHT' }
  const quantity = { value: 168.2, lo: 168.15, hi: 168.25, system: 'http://unitsofmeasure.org', unitCode: 'cm', unit: 'cm' }

  test('code, once per coding, text from the display', () => {
    expect(rowsOf(rows, 'token', 'code')).toEqual([height])
    expect(rowsOf(rows, 'token', 'status')).toEqual([{ system: 'http://hl7.org/fhir/observation-status', value: 'final', text: null }])
  })

  test('value-quantity', () => {
    expect(rowsOf(rows, 'quantity', 'value-quantity')).toEqual([quantity])
  })

  test('date from effective[x] as a Period', () => {
    expect(rowsOf(rows, 'date', 'date')).toEqual([{ lo: '2011-11-21T08:43:05.000Z', hi: '2011-11-21T23:59:59.999Z', loDay: '2011-11-21', hiDay: '2011-11-21' }])
  })

  test('subject and patient (resolve() is Patient from the reference), urn:uuid kept as written', () => {
    expect(rowsOf(rows, 'reference', 'subject')).toEqual([ref('Patient', 'p1')])
    expect(rowsOf(rows, 'reference', 'patient')).toEqual([ref('Patient', 'p1')])
    expect(rowsOf(rows, 'reference', 'encounter')).toEqual([ref(null, null, null, 'urn:uuid:a850debc-8295-499c-bf2d-f58a85b8a9f2')])
    const group = extractIndexes({ ...observation, subject: { reference: 'Group/g1' } })
    expect(rowsOf(group, 'reference', 'subject')).toEqual([ref('Group', 'g1')])
    expect(rowsOf(group, 'reference', 'patient')).toEqual([])
  })

  test('code-value-quantity pairs the code and the value of the same Observation', () => {
    expect(rowsOf(rows, 'composite', 'code-value-quantity')).toEqual([
      {
        parts: [
          { type: 'token', row: { code: 'code', ...height } },
          { type: 'quantity', row: { code: 'value-quantity', ...quantity } },
        ],
      },
    ])
  })

  test('component-code-value-quantity pairs each component with its own value', () => {
    const bp = {
      resourceType: 'Observation',
      status: 'final',
      code: loinc('85354-9', 'Blood pressure panel'),
      component: [
        { code: loinc('8462-4', 'Diastolic Blood Pressure'), valueQuantity: { value: 77, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' } },
        { code: loinc('8480-6', 'Systolic Blood Pressure'), valueQuantity: { value: 120, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' } },
      ],
    }
    const pairs = rowsOf(extractIndexes(bp), 'composite', 'component-code-value-quantity').map((r) => [r.parts[0].row.value, r.parts[1].row.value])
    expect(pairs).toEqual([
      ['8462-4', 77],
      ['8480-6', 120],
    ])
    // combo-code-value-quantity is the union of code-value-quantity and this one: searched on their
    // rows, it stores none of its own
    expect(rowsOf(extractIndexes(bp), 'composite', 'combo-code-value-quantity')).toEqual([])
    expect(unionMembers(searchParamFor('Observation', 'combo-code-value-quantity')!)).toEqual(['code-value-quantity', 'component-code-value-quantity'])
  })

  test('composites sharing a component (the code) each pair it with their own value, node by node', () => {
    const obs = {
      resourceType: 'Observation',
      status: 'final',
      code: loinc('55284-4', 'Blood pressure'),
      valueQuantity: { value: 5, system: 'http://unitsofmeasure.org', code: '1' },
      component: [
        { code: loinc('8462-4', 'Diastolic Blood Pressure'), valueQuantity: { value: 77, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' } },
        { code: loinc('72166-2', 'Tobacco smoking status'), valueCodeableConcept: { coding: [{ system: 'http://snomed.info/sct', code: '266919005' }] } },
      ],
    }
    const rows = extractIndexes(obs)
    const pairs = (code: string) => rowsOf(rows, 'composite', code).map((r) => [r.parts[0].row.value, r.parts[1].row.value])
    expect(pairs('code-value-quantity')).toEqual([['55284-4', 5]])
    expect(pairs('code-value-concept')).toEqual([])
    expect(pairs('component-code-value-quantity')).toEqual([['8462-4', 77]])
    expect(pairs('component-code-value-concept')).toEqual([['72166-2', '266919005']])
  })
})

describe('extractIndexes: other types', () => {
  test('Encounter period, open-ended', () => {
    const rows = extractIndexes({ resourceType: 'Encounter', status: 'in-progress', class: { code: 'AMB' }, period: { start: '2020-05-01T10:00:00Z' } })
    expect(rowsOf(rows, 'date', 'date')).toEqual([{ lo: '2020-05-01T10:00:00.000Z', hi: DATE_MAX, loDay: '2020-05-01', hiDay: DAY_MAX }])
  })

  test('Condition onset[x] as dateTime or Period for onset-date; onset-age from Age', () => {
    const dt = extractIndexes({ resourceType: 'Condition', subject: { reference: 'Patient/p1' }, onsetDateTime: '2019-03' })
    expect(rowsOf(dt, 'date', 'onset-date')).toEqual([
      { lo: '2019-03-01T00:00:00.000Z', hi: '2019-03-31T23:59:59.999Z', loDay: '2019-03-01', hiDay: '2019-03-31' },
    ])
    const age = extractIndexes({
      resourceType: 'Condition',
      subject: { reference: 'Patient/p1' },
      onsetAge: { value: 52, system: 'http://unitsofmeasure.org', code: 'a' },
    })
    expect(rowsOf(age, 'date', 'onset-date')).toEqual([])
    expect(rowsOf(age, 'quantity', 'onset-age')).toEqual([{ value: 52, lo: 51.5, hi: 52.5, system: 'http://unitsofmeasure.org', unitCode: 'a', unit: null }])
  })

  test('MedicationRequest authoredon, code from medication[x] as CodeableConcept, medication as Reference', () => {
    const rows = extractIndexes({
      resourceType: 'MedicationRequest',
      status: 'active',
      intent: 'order',
      subject: { reference: 'Patient/p1' },
      authoredOn: '2020-01-15T09:30:00+01:00',
      medicationCodeableConcept: { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '834060' }] },
    })
    expect(rowsOf(rows, 'date', 'authoredon')).toEqual([
      { lo: '2020-01-15T08:30:00.000Z', hi: '2020-01-15T08:30:00.999Z', loDay: '2020-01-15', hiDay: '2020-01-15' },
    ])
    expect(rowsOf(rows, 'token', 'code')).toEqual([{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', value: '834060', text: null }])
    expect(rowsOf(rows, 'reference', 'medication')).toEqual([])
    const byRef = extractIndexes({ resourceType: 'MedicationRequest', medicationReference: { reference: 'Medication/m1' } })
    expect(rowsOf(byRef, 'reference', 'medication')).toEqual([ref('Medication', 'm1')])
    expect(rowsOf(byRef, 'token', 'code')).toEqual([])
  })

  test('Practitioner phone and email from telecom.where(system=...)', () => {
    const rows = extractIndexes({
      resourceType: 'Practitioner',
      telecom: [
        { system: 'phone', value: '555-1234' },
        { system: 'email', value: 'a@b.org' },
      ],
    })
    expect(rowsOf(rows, 'token', 'phone')).toEqual([{ system: 'phone', value: '555-1234', text: null }])
    expect(rowsOf(rows, 'token', 'email')).toEqual([{ system: 'email', value: 'a@b.org', text: null }])
    expect(rowsOf(rows, 'token', 'telecom')).toHaveLength(2)
  })

  test('rows are deduplicated per code', () => {
    const rows = extractIndexes({ resourceType: 'Patient', name: [{ family: 'Smith' }, { family: 'Smith' }] })
    expect(rowsOf(rows, 'string', 'family')).toEqual([{ value_norm: 'SMITH', value_exact: 'Smith' }])
  })

  test('equal values of different parameters each keep their row', () => {
    const rows = extractIndexes({ resourceType: 'Patient', name: [{ family: 'Smith', given: ['Smith', 'Smith'] }] })
    expect(rowsOf(rows, 'string', 'family')).toEqual([{ value_norm: 'SMITH', value_exact: 'Smith' }])
    expect(rowsOf(rows, 'string', 'given')).toEqual([{ value_norm: 'SMITH', value_exact: 'Smith' }])
  })

  test('the resource is left as it was (a deep-frozen one works, fhirpath.js fallback included)', () => {
    const freeze = (o: any): any => {
      if (o && typeof o === 'object') {
        for (const v of Object.values(o)) freeze(v)
        Object.freeze(o)
      }
      return o
    }
    const p = freeze(structuredClone({ ...patient, deceasedDateTime: '2020-01-01' }))
    const before = JSON.stringify(p)
    const rows = extractIndexes(p, { baseUrl: BASE })
    expect(rowsOf(rows, 'token', 'deceased')).toEqual([{ system: null, value: 'true', text: null }])
    expect(JSON.stringify(p)).toBe(before)
    const doc = freeze({ resourceType: 'Bundle', type: 'document', entry: [{ resource: { resourceType: 'Composition', id: 'c1' } }] })
    expect(rowsOf(extractIndexes(doc), 'token', 'type')).toEqual([{ system: 'http://hl7.org/fhir/bundle-type', value: 'document', text: null }])
  })

  test('unknown types and non-resources give no rows', () => {
    expect(Object.values(extractIndexes({ resourceType: 'Nope' })).flat()).toEqual([])
    expect(Object.values(extractIndexes(null)).flat()).toEqual([])
  })
})
