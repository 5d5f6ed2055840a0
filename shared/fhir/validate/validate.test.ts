// Targeted failures of validateResource, one per rule, each asserting the issue code and path.
import { describe, expect, test } from 'bun:test'
import { AppError, type Issue } from '../../errors'
import { assertValid, validateResource } from './validate'

function only(issues: Issue[]): Pick<Issue, 'code' | 'expression'> {
  expect(issues).toHaveLength(1)
  return { code: issues[0].code, expression: issues[0].expression }
}

const patient = (extra: Record<string, unknown>) => ({ resourceType: 'Patient', id: 'p1', ...extra })
const observation = (extra: Record<string, unknown>) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
  ...extra,
})

describe('valid resources', () => {
  test('a minimal resource has no issues', () => {
    expect(validateResource({ resourceType: 'Patient' })).toEqual([])
  })

  test('a full patient with primitive extensions and parallel arrays has no issues', () => {
    const issues = validateResource(
      patient({
        meta: { lastUpdated: '2024-01-02T03:04:05.678Z', profile: ['http://example.org/p'] },
        text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">Hi</div>' },
        active: true,
        name: [
          {
            use: 'official',
            family: 'Chalmers',
            given: ['Peter', null, 'James'],
            _given: [null, { extension: [{ url: 'http://x', valueString: 'x' }] }, null],
          },
        ],
        gender: 'male',
        _birthDate: { extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' }] },
        deceasedBoolean: false,
        multipleBirthInteger: 2,
        contact: [{ relationship: [{ text: 'friend' }], name: { family: 'Du Marché' } }],
        photo: [{ contentType: 'image/x-anything', data: 'SGVs bG8=' }],
        extension: [{ url: 'http://x', extension: [{ url: 'a', valueDecimal: 1.5 }] }],
      }),
    )
    expect(issues).toEqual([])
  })

  test('the primitive extension alone satisfies a required element', () => {
    const issues = validateResource(observation({ status: undefined, _status: { extension: [{ url: 'http://x', valueBoolean: true }] } }))
    expect(issues).toEqual([])
  })
})

describe('resourceType', () => {
  test('wrong resourceType against the expected one', () => {
    const issues = validateResource(observation({}), { expectedType: 'Patient' })
    expect(only(issues)).toEqual({ code: 'invalid', expression: ['resourceType'] })
    expect(issues[0].diagnostics).toBe('Incorrect resource type found, expected "Patient" but found "Observation"')
  })

  test('unknown resourceType', () => {
    expect(only(validateResource({ resourceType: 'Foo' }))).toEqual({ code: 'invalid', expression: ['resourceType'] })
  })

  test('abstract resourceType is not a resource', () => {
    expect(only(validateResource({ resourceType: 'DomainResource' }))).toEqual({ code: 'invalid', expression: ['resourceType'] })
  })

  test('missing resourceType', () => {
    expect(only(validateResource({ id: 'x' }))).toEqual({ code: 'required', expression: ['resourceType'] })
  })

  test('not an object', () => {
    for (const body of [null, [], 'Patient', 3]) expect(only(validateResource(body)).code).toBe('structure')
  })
})

describe('elements and shape', () => {
  test('unknown element', () => {
    const issues = validateResource(patient({ foo: 1 }))
    expect(only(issues)).toEqual({ code: 'structure', expression: ['Patient.foo'] })
    expect(issues[0].diagnostics).toContain("Unrecognized element 'foo'")
  })

  test('unknown element inside a data type and a backbone element', () => {
    const issues = validateResource(patient({ name: [{ family: 'x', surname: 'y' }], contact: [{ gender: 'male', foo: true }] }))
    expect(issues.map((i) => [i.code, i.expression])).toEqual([
      ['structure', ['Patient.name[0].surname']],
      ['structure', ['Patient.contact[0].foo']],
    ])
  })

  test('wrong primitive type', () => {
    expect(only(validateResource(patient({ name: [{ given: ['Peter', 5] }] })))).toEqual({ code: 'value', expression: ['Patient.name[0].given[1]'] })
  })

  test('object where a primitive is expected, primitive where an object is expected', () => {
    expect(only(validateResource(patient({ birthDate: { value: '2000' } })))).toEqual({ code: 'structure', expression: ['Patient.birthDate'] })
    expect(only(validateResource(patient({ maritalStatus: 'M' })))).toEqual({ code: 'structure', expression: ['Patient.maritalStatus'] })
  })

  test('bad date', () => {
    expect(only(validateResource(patient({ birthDate: '1980-13-01' })))).toEqual({ code: 'value', expression: ['Patient.birthDate'] })
    expect(only(validateResource(patient({ birthDate: '2021-02-29' })))).toEqual({ code: 'value', expression: ['Patient.birthDate'] })
    expect(validateResource(patient({ birthDate: '2020-02-29' }))).toEqual([])
  })

  test('bad decimal', () => {
    const issues = validateResource(observation({ valueQuantity: { value: '12.5', unit: 'kg' } }))
    expect(only(issues)).toEqual({ code: 'value', expression: ['Observation.valueQuantity.value'] })
  })

  test('boolean as string', () => {
    expect(only(validateResource(patient({ active: 'true' })))).toEqual({ code: 'value', expression: ['Patient.active'] })
  })

  test('integer out of range and positiveInt zero', () => {
    expect(only(validateResource(patient({ multipleBirthInteger: 2 ** 31 })))).toEqual({ code: 'value', expression: ['Patient.multipleBirthInteger'] })
    const issues = validateResource(observation({ valueSampledData: { origin: { value: 1 }, period: 1, dimensions: 0, data: 'E' } }))
    expect(only(issues)).toEqual({ code: 'value', expression: ['Observation.valueSampledData.dimensions'] })
  })

  test('array where a single value is expected', () => {
    expect(only(validateResource(patient({ gender: ['male'] })))).toEqual({ code: 'structure', expression: ['Patient.gender'] })
  })

  test('single value where an array is expected', () => {
    expect(only(validateResource(patient({ name: { family: 'x' } })))).toEqual({ code: 'structure', expression: ['Patient.name'] })
  })

  test('empty object', () => {
    expect(only(validateResource(patient({ maritalStatus: {} })))).toEqual({ code: 'structure', expression: ['Patient.maritalStatus'] })
  })

  test('empty array and empty string', () => {
    expect(only(validateResource(patient({ name: [] })))).toEqual({ code: 'structure', expression: ['Patient.name'] })
    expect(only(validateResource(patient({ name: [{ family: '' }] })))).toEqual({ code: 'value', expression: ['Patient.name[0].family'] })
  })

  test('null', () => {
    expect(only(validateResource(patient({ active: null })))).toEqual({ code: 'structure', expression: ['Patient.active'] })
    expect(only(validateResource(patient({ name: [null] })))).toEqual({ code: 'structure', expression: ['Patient.name[0]'] })
    expect(only(validateResource(patient({ name: [{ given: ['a', null] }] })))).toEqual({ code: 'structure', expression: ['Patient.name[0].given[1]'] })
  })

  test('bad id', () => {
    for (const id of ['a b', 'a_b', 'x'.repeat(65), '', 7]) {
      expect(only(validateResource(patient({ id })))).toEqual({ code: 'value', expression: ['Patient.id'] })
    }
    expect(validateResource(patient({ id: 'A-b.9'.padEnd(64, '0') }))).toEqual([])
  })

  test('code with bad whitespace', () => {
    expect(only(validateResource(patient({ name: [{ use: ' official' }] })))).toEqual({ code: 'value', expression: ['Patient.name[0].use'] })
  })

  test('uri with whitespace', () => {
    expect(only(validateResource(patient({ identifier: [{ system: 'http://a b' }] })))).toEqual({ code: 'value', expression: ['Patient.identifier[0].system'] })
  })
})

describe('cardinality, choices, bindings', () => {
  test('missing required (Observation without status)', () => {
    expect(only(validateResource(observation({ status: undefined })))).toEqual({ code: 'required', expression: ['Observation.status'] })
  })

  test('missing required inside a backbone element', () => {
    const issues = validateResource(patient({ link: [{ type: 'seealso' }] }))
    expect(only(issues)).toEqual({ code: 'required', expression: ['Patient.link[0].other'] })
    const comp = validateResource(observation({ component: [{ valueString: 'x' }] }))
    expect(only(comp)).toEqual({ code: 'required', expression: ['Observation.component[0].code'] })
  })

  test('bad code for Patient.gender', () => {
    const issues = validateResource(patient({ gender: 'M' }))
    expect(only(issues)).toEqual({ code: 'code-invalid', expression: ['Patient.gender'] })
  })

  test('required binding inside a data type', () => {
    expect(only(validateResource(patient({ telecom: [{ system: 'beeper', value: '1' }] })))).toEqual({
      code: 'code-invalid',
      expression: ['Patient.telecom[0].system'],
    })
  })

  test('a binding that cannot be expanded from the definitions is skipped', () => {
    expect(validateResource(patient({ photo: [{ contentType: 'application/x-not-a-registered-type' }] }))).toEqual([])
  })

  test('two value[x] variants', () => {
    const issues = validateResource(observation({ valueString: 'a', valueQuantity: { value: 1 } }))
    expect(only(issues)).toEqual({ code: 'structure', expression: ['Observation.valueQuantity'] })
  })

  test('a value and its primitive extension are one variant', () => {
    expect(validateResource(observation({ valueString: 'a', _valueString: { id: 'x' } }))).toEqual([])
  })

  test('unknown choice variant', () => {
    expect(only(validateResource(observation({ valueFoo: 1 })))).toEqual({ code: 'structure', expression: ['Observation.valueFoo'] })
  })
})

describe('primitive extensions', () => {
  test('_name with an unknown property', () => {
    expect(only(validateResource(patient({ _birthDate: { foo: 1 } })))).toEqual({ code: 'structure', expression: ['Patient.birthDate.foo'] })
  })

  test('_name must be an object, and an array for a repeating element', () => {
    expect(only(validateResource(patient({ _birthDate: 'x' })))).toEqual({ code: 'structure', expression: ['Patient.birthDate'] })
    expect(only(validateResource(patient({ name: [{ given: ['a'], _given: { id: 'x' } }] })))).toEqual({
      code: 'structure',
      expression: ['Patient.name[0].given'],
    })
  })

  test('parallel arrays of different lengths', () => {
    const issues = validateResource(patient({ name: [{ given: ['a', 'b'], _given: [{ id: 'x' }] }] }))
    expect(only(issues)).toEqual({ code: 'structure', expression: ['Patient.name[0].given'] })
  })

  test('null on both sides of a parallel array', () => {
    const issues = validateResource(patient({ name: [{ given: ['a', null], _given: [null, null] }] }))
    expect(issues.map((i) => i.expression)).toEqual([['Patient.name[0].given[1]'], ['Patient.name[0].given[1]']])
  })

  test('element ids and extension urls take no _name companion', () => {
    expect(only(validateResource(patient({ name: [{ family: 'x', _id: { id: 'y' } }] })))).toEqual({ code: 'structure', expression: ['Patient.name[0]._id'] })
  })
})

describe('extensions, narrative, nested resources', () => {
  test('extension without url', () => {
    expect(only(validateResource(patient({ extension: [{ valueString: 'x' }] })))).toEqual({ code: 'required', expression: ['Patient.extension[0].url'] })
  })

  test('extension value of a type Extension does not allow', () => {
    expect(only(validateResource(patient({ extension: [{ url: 'http://x', valueBackboneElement: {} }] })))).toEqual({
      code: 'structure',
      expression: ['Patient.extension[0].valueBackboneElement'],
    })
  })

  test('narrative div must be xhtml', () => {
    expect(only(validateResource(patient({ text: { status: 'generated', div: 'plain text' } })))).toEqual({ code: 'value', expression: ['Patient.text.div'] })
  })

  test('contained resources are validated as resources', () => {
    const issues = validateResource(patient({ contained: [{ resourceType: 'Organization', id: 'o', active: 'yes' }, { resourceType: 'Nope' }] }))
    expect(issues.map((i) => [i.code, i.expression])).toEqual([
      ['value', ['Patient.contained[0].active']],
      ['invalid', ['Patient.contained[1].resourceType']],
    ])
  })

  test('Bundle.entry.resource is validated', () => {
    const bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { resource: patient({}), request: { method: 'POST', url: 'Patient' } },
        { resource: observation({}), request: { method: 'POST', url: 'Observation' } },
        { resource: observation({ status: 'done' }), request: { method: 'POST', url: 'Observation' } },
      ],
    }
    expect(only(validateResource(bundle))).toEqual({ code: 'code-invalid', expression: ['Bundle.entry[2].resource.status'] })
  })

  test('Parameters.parameter.resource is validated', () => {
    const params = { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: { resourceType: 'Patient', gender: 'x' } }] }
    expect(only(validateResource(params))).toEqual({ code: 'code-invalid', expression: ['Parameters.parameter[0].resource.gender'] })
  })

  test('resourceType is only allowed on resources', () => {
    expect(only(validateResource(patient({ name: [{ resourceType: 'HumanName' }] })))).toEqual({
      code: 'structure',
      expression: ['Patient.name[0].resourceType'],
    })
  })
})

describe('bounds and non-R4 elements', () => {
  test('Medplum additions to Meta are not R4 elements', () => {
    expect(only(validateResource(patient({ meta: { project: 'x' } })))).toEqual({ code: 'structure', expression: ['Patient.meta.project'] })
  })

  test('deep nesting stops with too-costly instead of overflowing the stack', () => {
    let item: any = { linkId: 'x', type: 'group' }
    for (let i = 0; i < 5000; i++) item = { linkId: String(i), type: 'group', item: [item] }
    const issues = validateResource({ resourceType: 'Questionnaire', status: 'draft', item: [item] })
    expect(issues.map((i) => i.code)).toEqual(['too-costly'])
  })

  test('issues are capped', () => {
    const issues = validateResource(patient({ name: Array.from({ length: 2000 }, () => ({ use: 'bad' })) }))
    expect(issues).toHaveLength(1001)
    expect(issues[1000].code).toBe('too-costly')
  })

  test('a huge invalid value is cut short in the message', () => {
    const issues = validateResource(patient({ photo: [{ data: '$'.repeat(1_000_000) }] }))
    expect(only(issues)).toEqual({ code: 'value', expression: ['Patient.photo[0].data'] })
    expect(issues[0].diagnostics.length).toBeLessThan(300)
  })
})

describe('assertValid', () => {
  test('throws an invalid AppError with every issue', () => {
    let error: unknown
    try {
      assertValid(patient({ gender: 'M', foo: 1 }), { expectedType: 'Patient' })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(AppError)
    const app = error as AppError
    expect(app.category).toBe('invalid')
    expect(app.issues.map((i) => i.code)).toEqual(['code-invalid', 'structure'])
    expect(app.message).toBe(app.issues[0].diagnostics)
  })

  test('returns for a valid resource', () => {
    expect(() => assertValid(patient({}), { expectedType: 'Patient' })).not.toThrow()
  })
})
