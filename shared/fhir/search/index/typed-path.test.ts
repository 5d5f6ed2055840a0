import { describe, expect, test } from 'bun:test'
import { compileTypedPath } from './typed-path'

const values = (expr: string, root: string, focus: unknown, relative = false) =>
  compileTypedPath(expr, root, relative)!(focus, root).map((v) => [v.type, v.value])

describe('typed paths', () => {
  const obs = {
    resourceType: 'Observation',
    effectiveDateTime: '2020-01-01',
    valueQuantity: { value: 1 },
    component: [
      { code: { text: 'a' }, valueString: 'x' },
      { code: { text: 'b' }, valueQuantity: { value: 2 } },
    ],
    subject: { reference: 'Group/1' },
  }

  test('choice elements expand to their typed properties', () => {
    expect(values('Observation.effective', 'Observation', obs)).toEqual([['dateTime', '2020-01-01']])
    expect(values('Observation.component.value', 'Observation', obs)).toEqual([
      ['string', 'x'],
      ['Quantity', { value: 2 }],
    ])
  })

  test('ofType keeps the type and its profiles; DateTime is read as dateTime', () => {
    expect(values('(Observation.component.value.ofType(Quantity))', 'Observation', obs)).toEqual([['Quantity', { value: 2 }]])
    expect(values('Condition.onset.ofType(Quantity)', 'Condition', { onsetAge: { value: 3 } })).toEqual([['Age', { value: 3 }]])
    expect(values('value.ofType(DateTime) | value.ofType(Period)', 'Observation', obs, true)).toEqual([])
    expect(values('Observation.effective.ofType(DateTime)', 'Observation', obs)).toEqual([['dateTime', '2020-01-01']])
  })

  test('grouping, where(resolve() is T), where(name = literal)', () => {
    expect(values('(Observation.value.ofType(Quantity)).value', 'Observation', obs)).toEqual([['decimal', 1]])
    expect(values('Observation.subject.where(resolve() is Patient)', 'Observation', obs)).toEqual([])
    expect(values('Observation.subject.where(resolve() is Group)', 'Observation', obs)).toEqual([['Reference', { reference: 'Group/1' }]])
    const p = {
      telecom: [
        { system: 'phone', value: '1' },
        { system: 'email', value: 'e' },
      ],
    }
    expect(values("Patient.telecom.where(system='email')", 'Patient', p)).toEqual([['ContactPoint', { system: 'email', value: 'e' }]])
  })

  test('backbone elements carry their path as type; relative expressions start from it', () => {
    const components = compileTypedPath('Observation.component', 'Observation')!(obs, 'Observation')
    expect(components.map((c) => c.type)).toEqual(['Observation.component', 'Observation.component'])
    expect(values('code', 'Observation.component', obs.component[0], true)).toEqual([['CodeableConcept', { text: 'a' }]])
  })

  test('anything else is left to fhirpath.js', () => {
    for (const expr of [
      'Bundle.entry[0].resource',
      'Patient.deceased.exists() and Patient.deceased != false',
      '%resource.x',
      'Patient.nope',
      'Observation.code.first()',
    ]) {
      expect(compileTypedPath(expr, expr.split('.')[0]!)).toBeUndefined()
    }
  })
})
