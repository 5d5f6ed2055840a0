import { describe, expect, test } from 'bun:test'
import { extract, normalizeString } from './string'
import { extract as token } from './token'

describe('string and token', () => {
  test('HAPI normalisation: accents stripped, upper-cased, 200 characters', () => {
    expect(normalizeString('Adán Pérez-Müller')).toBe('ADAN PEREZ-MULLER')
    expect(normalizeString('Ærøskøbing ß')).toBe('ÆRØSKØBING SS')
    expect(normalizeString('x'.repeat(300))).toHaveLength(200)
  })

  test('names and addresses split into their parts', () => {
    expect(
      extract(
        [
          { type: 'HumanName', value: { family: 'Núñez', given: ['Ana', 'María'], prefix: ['Ms.'], text: 'Ana Núñez' } },
          { type: 'Address', value: { line: ['1 Main St'], city: 'Zürich', postalCode: '8000', country: 'CH' } },
          { type: 'string', value: '  ' },
        ],
        { code: 'c' },
      ),
    ).toEqual([
      { code: 'c', value_norm: 'ANA NUNEZ', value_exact: 'Ana Núñez' },
      { code: 'c', value_norm: 'NUNEZ', value_exact: 'Núñez' },
      { code: 'c', value_norm: 'ANA', value_exact: 'Ana' },
      { code: 'c', value_norm: 'MARIA', value_exact: 'María' },
      { code: 'c', value_norm: 'MS.', value_exact: 'Ms.' },
      { code: 'c', value_norm: '1 MAIN ST', value_exact: '1 Main St' },
      { code: 'c', value_norm: 'ZURICH', value_exact: 'Zürich' },
      { code: 'c', value_norm: '8000', value_exact: '8000' },
      { code: 'c', value_norm: 'CH', value_exact: 'CH' },
    ])
  })

  test('tokens from Coding, CodeableConcept, Identifier, ContactPoint, boolean, code, string', () => {
    expect(
      token(
        [
          {
            type: 'CodeableConcept',
            value: {
              coding: [
                { system: 's', code: 'a', display: 'Ä' },
                { system: 's2', code: 'b' },
              ],
              text: 'Concept',
            },
          },
          { type: 'CodeableConcept', value: { coding: [{ system: 's', code: 'c' }], text: 'Lone' } },
          { type: 'CodeableConcept', value: { text: 'only text' } },
          { type: 'Coding', value: { system: 'urn:tags', code: 't1' } },
          { type: 'Identifier', value: { system: 'urn:mrn', value: '12', type: { text: 'MRN' } } },
          { type: 'ContactPoint', value: { system: 'phone', value: '555-1234' } },
          { type: 'boolean', value: false },
          { type: 'string', value: 'free' },
        ],
        { code: 't' },
      ),
    ).toEqual([
      { code: 't', system: 's', value: 'a', text: 'A' },
      { code: 't', system: 's2', value: 'b', text: null },
      { code: 't', system: null, value: null, text: 'CONCEPT' },
      { code: 't', system: 's', value: 'c', text: 'LONE' },
      { code: 't', system: null, value: null, text: 'ONLY TEXT' },
      { code: 't', system: 'urn:tags', value: 't1', text: null },
      { code: 't', system: 'urn:mrn', value: '12', text: 'MRN' },
      { code: 't', system: 'phone', value: '555-1234', text: null },
      { code: 't', system: null, value: 'false', text: null },
      { code: 't', system: null, value: 'free', text: null },
    ])
  })
})
