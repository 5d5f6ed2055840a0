import { describe, expect, test } from 'bun:test'
import { expressionForBase, rewriteAs, splitUnion } from './expression'

describe('search parameter expressions', () => {
  test('as becomes ofType', () => {
    expect(rewriteAs('(Observation.value as Quantity) | (Observation.value as SampledData)')).toBe(
      '(Observation.value.ofType(Quantity)) | (Observation.value.ofType(SampledData))',
    )
    expect(rewriteAs('Condition.onset.as(Age) | Condition.onset.as(Range)')).toBe('Condition.onset.ofType(Age) | Condition.onset.ofType(Range)')
    expect(rewriteAs('Observation.component.value as Quantity')).toBe('Observation.component.value.ofType(Quantity)')
  })

  test('unions split at the top level only', () => {
    expect(splitUnion("A.b.where(x='a|b') | (C.d | C.e) | F")).toEqual(["A.b.where(x='a|b')", '(C.d | C.e)', 'F'])
  })

  test('the part for one base; Resource parts and relative parts re-rooted', () => {
    const expr = 'AllergyIntolerance.patient | CarePlan.subject.where(resolve() is Patient) | (DeviceRequest.code as CodeableConcept)'
    expect(expressionForBase(expr, 'CarePlan')).toBe('CarePlan.subject.where(resolve() is Patient)')
    expect(expressionForBase(expr, 'DeviceRequest')).toBe('(DeviceRequest.code.ofType(CodeableConcept))')
    expect(expressionForBase(expr, 'Patient')).toBeUndefined()
    expect(expressionForBase('Resource.meta.tag', 'Observation')).toBe('Observation.meta.tag')
    expect(expressionForBase('name | alias', 'InsurancePlan')).toBe('InsurancePlan.name | InsurancePlan.alias')
  })
})
