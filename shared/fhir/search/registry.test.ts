// The registry against the official R4 bundle (read here only, never copied): the same parameters,
// types and codes for every base type.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { dataPath } from '../../../tests/data'
import { resourceTypes } from '../definitions/resource-types'
import { searchParamFor, searchParamsFor, searchableTypes, storedCodes, unionMembers } from './registry'

const official: any[] = JSON.parse(readFileSync(dataPath('r4-search-parameters.json'), 'utf8')).entry.map((e: any) => e.resource)

function officialByBase(): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>()
  for (const sp of official)
    for (const base of sp.base) {
      if (!out.has(base)) out.set(base, new Map())
      out.get(base)!.set(sp.code, sp.type)
    }
  return out
}

describe('registry', () => {
  const byBase = officialByBase()

  test('every R4 resource type has its official parameters, no more, no fewer', () => {
    expect(searchableTypes().sort()).toEqual([...resourceTypes()])
    let total = 0
    let officialTotal = 0
    for (const type of resourceTypes()) {
      const own = [...searchParamsFor(type).values()].filter((d) => !d.common)
      const expected = byBase.get(type) ?? new Map()
      expect({ type, codes: own.map((d) => `${d.code}:${d.type}`).sort() }).toEqual({
        type,
        codes: [...expected].map(([code, t]) => `${code}:${t}`).sort(),
      })
      total += own.length
      officialTotal += expected.size
    }
    console.log(
      `registry: ${total} type-specific parameters over ${resourceTypes().length} types (official bundle, counted per base: ${officialTotal}, from ${official.length} SearchParameter resources)`,
    )
    expect(total).toBe(officialTotal)
  })

  test('common parameters are on every type, marked for the read side', () => {
    const resource = [...byBase.get('Resource')!.keys()]
    const domain = [...byBase.get('DomainResource')!.keys()]
    for (const type of resourceTypes()) {
      const common = [...searchParamsFor(type).values()].filter((d) => d.common)
      const fromBundle = common.filter((d) => !d.url.includes('/R4/'))
      const expected = ['Bundle', 'Binary', 'Parameters'].includes(type) ? resource : [...resource, ...domain]
      expect(fromBundle.map((d) => d.code).sort()).toEqual(expected.sort())
    }
    const p = searchParamsFor('Patient')
    expect(p.get('_id')).toMatchObject({ type: 'token', common: 'column', expression: 'Patient.id' })
    expect(p.get('_lastUpdated')).toMatchObject({ type: 'date', common: 'column' })
    expect(p.get('_tag')).toMatchObject({ type: 'token', common: 'meta', expression: 'Patient.meta.tag' })
    expect(p.get('_profile')).toMatchObject({ type: 'uri', common: 'meta' })
    expect(p.get('_source')).toMatchObject({ type: 'uri', common: 'meta' })
    expect(p.get('_text')).toMatchObject({ type: 'string', common: 'fulltext' })
    expect(p.get('_content')?.common).toBe('fulltext')
    for (const code of ['_has', '_list', '_type', '_filter', '_query']) expect(p.get(code)?.common).toBe('control')
    expect(searchParamsFor('Bundle').get('_text')).toBeUndefined()
    console.log(`registry: ${p.size} parameters for Patient, ${[...p.values()].filter((d) => d.common).length} of them common`)
  })

  test('multi-base expressions are cut to the base type', () => {
    expect(searchParamFor('Observation', 'patient')).toMatchObject({
      type: 'reference',
      expression: 'Observation.subject.where(resolve() is Patient)',
      targets: ['Patient'],
    })
    expect(searchParamFor('Patient', 'name')?.expression).toBe('Patient.name')
    expect(searchParamFor('Practitioner', 'phone')?.expression).toBe("Practitioner.telecom.where(system='phone')")
    expect(searchParamFor('MedicationRequest', 'code')?.expression).toBe('(MedicationRequest.medication.ofType(CodeableConcept))')
    expect(searchParamFor('Observation', 'value-quantity')?.expression).toBe('(Observation.value.ofType(Quantity)) | (Observation.value.ofType(SampledData))')
    // no expression keeps another base's part
    for (const type of resourceTypes()) {
      for (const d of searchParamsFor(type).values()) {
        for (const part of d.expression?.split(' | ') ?? []) expect(part.replace(/^\(+/, '').split('.')[0]!).toBe(type)
      }
    }
  })

  test('composites name their components by code and type', () => {
    expect(searchParamFor('Observation', 'code-value-quantity')).toMatchObject({
      type: 'composite',
      expression: 'Observation',
      components: [
        { code: 'code', type: 'token', expression: 'code' },
        { code: 'value-quantity', type: 'quantity', expression: 'value.ofType(Quantity)' },
      ],
    })
    expect(searchParamFor('Observation', 'combo-code-value-quantity')?.expression).toBe('Observation | Observation.component')
    expect(searchParamFor('Observation', 'code-value-date')?.components?.[1]).toMatchObject({ code: 'value-date', type: 'date' })
  })

  test('Medplum additions outside R4 are left out', () => {
    expect(searchParamFor('DetectedIssue', 'status')).toBeUndefined()
    expect(searchParamFor('DeviceDefinition', 'classification')).toBeUndefined()
    expect(searchParamFor('ServiceRequest', 'order-detail')).toBeUndefined()
  })
})

describe('union parameters', () => {
  test('exactly the Observation combo parameters are unions of others, and of which', () => {
    const unions: string[] = []
    for (const t of searchableTypes())
      for (const [code, def] of searchParamsFor(t)) {
        const members = unionMembers(def)
        if (members) unions.push(`${t}.${code} = ${[...members].sort().join(' + ')}`)
      }
    expect(unions.sort()).toEqual([
      'Observation.combo-code = code + component-code',
      'Observation.combo-code-value-concept = code-value-concept + component-code-value-concept',
      'Observation.combo-code-value-quantity = code-value-quantity + component-code-value-quantity',
      'Observation.combo-data-absent-reason = component-data-absent-reason + data-absent-reason',
      'Observation.combo-value-concept = component-value-concept + value-concept',
      'Observation.combo-value-quantity = component-value-quantity + value-quantity',
    ])
    expect(storedCodes(searchParamFor('Observation', 'code')!)).toEqual(['code'])
  })
})
