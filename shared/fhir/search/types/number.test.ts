import { describe, expect, test } from 'bun:test'
import { extract, precisionRange } from './number'
import { extract as quantity } from './quantity'

describe('number and quantity', () => {
  test('implicit precision range, HAPI style: 100 is [99.5, 100.5)', () => {
    expect(precisionRange(100)).toEqual([99.5, 100.5])
    expect(precisionRange(1.5)).toEqual([1.45, 1.55])
    expect(precisionRange(0.001)).toEqual([0.0005, 0.0015])
    expect(precisionRange(-3)).toEqual([-3.5, -2.5])
    expect(precisionRange(1e-7)).toEqual([5e-8, 1.5e-7])
    expect(precisionRange(1e21)).toEqual([5e20, 1.5e21])
  })

  test('numbers and ranges', () => {
    expect(
      extract(
        [
          { type: 'integer', value: 3 },
          { type: 'decimal', value: 0.25 },
          { type: 'Range', value: { low: { value: 1 }, high: { value: 2 } } },
          { type: 'Range', value: { high: { value: 2 } } },
          { type: 'string', value: '7' },
        ],
        { code: 'n' },
      ),
    ).toEqual([
      { code: 'n', value: 3, lo: 2.5, hi: 3.5 },
      { code: 'n', value: 0.25, lo: 0.245, hi: 0.255 },
      { code: 'n', value: null, lo: 1, hi: 2 },
      { code: 'n', value: null, lo: null, hi: 2 },
    ])
  })

  test('Quantity and its profiles, Money, Range; SampledData is not indexed', () => {
    expect(
      quantity(
        [
          { type: 'Quantity', value: { value: 5.4, unit: 'mmol/l', system: 'http://unitsofmeasure.org', code: 'mmol/L' } },
          { type: 'Age', value: { value: 42, unit: 'yr', system: 'http://unitsofmeasure.org', code: 'a' } },
          { type: 'Money', value: { value: 12.5, currency: 'EUR' } },
          { type: 'Range', value: { low: { value: 2, unit: 'mg' } } },
          { type: 'Quantity', value: { unit: 'mg' } },
          { type: 'SampledData', value: { origin: { value: 1 } } },
        ],
        { code: 'q' },
      ),
    ).toEqual([
      { code: 'q', value: 5.4, lo: 5.35, hi: 5.45, system: 'http://unitsofmeasure.org', unitCode: 'mmol/L', unit: 'mmol/l' },
      { code: 'q', value: 42, lo: 41.5, hi: 42.5, system: 'http://unitsofmeasure.org', unitCode: 'a', unit: 'yr' },
      { code: 'q', value: 12.5, lo: 12.45, hi: 12.55, system: 'urn:iso:std:iso:4217', unitCode: 'EUR', unit: 'EUR' },
      { code: 'q', value: null, lo: 2, hi: null, system: null, unitCode: null, unit: 'mg' },
    ])
  })
})
