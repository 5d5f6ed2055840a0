import { expect, test } from 'bun:test'
import { valueSetCodes } from './value-set-codes'

test('a value set of a whole FHIR code system', () => {
  expect([...valueSetCodes('http://hl7.org/fhir/ValueSet/administrative-gender')!].sort()).toEqual(['female', 'male', 'other', 'unknown'])
})

test('a version suffix is ignored', () => {
  expect(valueSetCodes('http://hl7.org/fhir/ValueSet/observation-status|4.0.1')?.has('final')).toBe(true)
})

test('a value set including other value sets', () => {
  const allTypes = valueSetCodes('http://hl7.org/fhir/ValueSet/all-types')!
  expect(allTypes.has('Patient')).toBe(true)
  expect(allTypes.has('HumanName')).toBe(true)
})

test('a hierarchical v3 code system includes nested codes', () => {
  const codes = valueSetCodes('http://terminology.hl7.org/ValueSet/v3-ActCode')
  expect(codes?.has('_ActEncounterCode')).toBe(true)
  expect(codes?.has('AMB')).toBe(true) // a child of _ActEncounterCode
})

test('value sets defined by a filter cannot be expanded', () => {
  expect(valueSetCodes('http://terminology.hl7.org/ValueSet/v3-ActEncounterCode')).toBeUndefined()
})

test('value sets over external code systems cannot be expanded', () => {
  expect(valueSetCodes('http://hl7.org/fhir/ValueSet/mimetypes')).toBeUndefined()
  expect(valueSetCodes('http://hl7.org/fhir/ValueSet/currencies')).toBeUndefined()
  expect(valueSetCodes('http://example.org/no-such-value-set')).toBeUndefined()
})
