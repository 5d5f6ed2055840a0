import { describe, expect, test } from 'bun:test'
import { extract, parseReference, referenceTargetType } from './reference'

const base = 'https://fhir.example.org/fhir'
const local = (targetType: string, targetId: string, version: string | null = null) => ({ targetType, targetId, version, url: null })
const external = (url: string, version: string | null = null) => ({ targetType: null, targetId: null, version, url })

describe('references', () => {
  test('relative, versioned, absolute on this server, external, urn, canonical, contained', () => {
    expect(parseReference('Patient/1', base)).toEqual(local('Patient', '1'))
    expect(parseReference('Patient/1/_history/2', base)).toEqual(local('Patient', '1', '2'))
    expect(parseReference(`${base}/Patient/1`, base)).toEqual(local('Patient', '1'))
    expect(parseReference(`${base}/Patient/1`, `${base}/`)).toEqual(local('Patient', '1'))
    expect(parseReference(`${base}/Patient/1/_history/3`, base)).toEqual(local('Patient', '1', '3'))
    expect(parseReference('http://other.org/fhir/Patient/1', base)).toEqual(external('http://other.org/fhir/Patient/1'))
    expect(parseReference(`${base}/Patient/1`)).toEqual(external(`${base}/Patient/1`)) // no base known
    expect(parseReference('urn:uuid:a850debc-8295-499c-bf2d-f58a85b8a9f2', base)).toEqual(external('urn:uuid:a850debc-8295-499c-bf2d-f58a85b8a9f2'))
    expect(parseReference('http://hl7.org/fhir/Questionnaire/phq-9|1.0', base)).toEqual(external('http://hl7.org/fhir/Questionnaire/phq-9', '1.0'))
    expect(parseReference('Unknown/1', base)).toEqual(external('Unknown/1'))
    expect(parseReference('#med1', base)).toBeUndefined()
  })

  test('the target type for resolve() is T', () => {
    expect(referenceTargetType({ reference: 'Group/g' })).toBe('Group')
    expect(referenceTargetType({ reference: 'http://x.org/fhir/Patient/1/_history/2' })).toBe('Patient')
    expect(referenceTargetType({ reference: 'urn:uuid:1', type: 'Patient' })).toBe('Patient')
    expect(referenceTargetType({ identifier: { value: '1' } })).toBeUndefined()
  })

  test('rows from Reference, logical references and canonicals; other choices ignored', () => {
    expect(
      extract(
        [
          { type: 'Reference', value: { reference: 'Patient/1', display: 'x' } },
          { type: 'Reference', value: { type: 'Patient', identifier: { system: 'urn:mrn', value: '7' } } },
          { type: 'Reference', value: { reference: '#c1' } },
          { type: 'canonical', value: 'http://example.org/Questionnaire/q' },
          { type: 'Attachment', value: { title: 'terms' } },
          { type: 'Patient', value: { resourceType: 'Patient', id: '1' } },
        ],
        { code: 'subject', baseUrl: base },
      ),
    ).toEqual([
      { code: 'subject', ...local('Patient', '1'), identifierSystem: null, identifierValue: null },
      { code: 'subject', targetType: 'Patient', targetId: null, version: null, url: null, identifierSystem: 'urn:mrn', identifierValue: '7' },
      { code: 'subject', ...external('http://example.org/Questionnaire/q'), identifierSystem: null, identifierValue: null },
    ])
  })
})
