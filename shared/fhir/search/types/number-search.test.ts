import { describe, expect, test } from 'bun:test'
import { thrown as thrownBy } from '../../../../tests/data'
import type { AppError } from '../../../errors'
import { decimalText, numberSearchRange, parseDecimal, parseNumberSearch, splitPrefix } from './number'

const range = (raw: string) => numberSearchRange(parseNumberSearch(raw, 'n'))

const thrown = (f: () => unknown) => thrownBy<AppError>(f)

describe('prefixes', () => {
  test('two leading letters are the prefix; none means eq; unknown ones are reported', () => {
    expect(splitPrefix('gt100')).toEqual({ prefix: 'gt', rest: '100' })
    expect(splitPrefix('100')).toEqual({ prefix: 'eq', rest: '100' })
    expect(splitPrefix('2020-01')).toEqual({ prefix: 'eq', rest: '2020-01' })
    expect(splitPrefix('xx5')).toEqual({ prefix: 'eq', rest: '5', bad: 'xx' })
    for (const p of ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap']) expect(splitPrefix(`${p}1`).prefix).toBe(p as any)
  })
})

describe('decimals, exactly as written', () => {
  test('parse and print', () => {
    expect(parseDecimal('1.50')).toEqual({ coef: 150n, scale: 2 })
    expect(parseDecimal('1e2')).toEqual({ coef: 1n, scale: -2 })
    expect(parseDecimal('-0.001')).toEqual({ coef: -1n, scale: 3 })
    expect(parseDecimal('.5')).toEqual({ coef: 5n, scale: 1 })
    expect(parseDecimal('5.')).toEqual({ coef: 5n, scale: 0 })
    expect(parseDecimal('1e1000')).toEqual({ coef: 1n, scale: -1000 })
    for (const bad of ['1e1001', '1e-1001', '1e99999', '', '.', 'abc', '1,5', '1e', '--1', '1.2.3', '0x10', 'NaN', 'Infinity'])
      expect(parseDecimal(bad)).toBeUndefined()
    expect(decimalText({ coef: 1n, scale: -2 })).toBe('100')
    expect(decimalText({ coef: -5n, scale: 3 })).toBe('-0.005')
    expect(decimalText({ coef: 12345n, scale: 2 })).toBe('123.45')
  })
})

describe('number search ranges', () => {
  test('eq and ne: the implicit precision, half-open', () => {
    expect(range('100')).toEqual({ lo: '99.5', hi: '100.5', hiInclusive: false })
    expect(range('100.0')).toEqual({ lo: '99.95', hi: '100.05', hiInclusive: false })
    expect(range('100.00')).toEqual({ lo: '99.995', hi: '100.005', hiInclusive: false })
    expect(range('1e2')).toEqual({ lo: '50', hi: '150', hiInclusive: false })
    expect(range('ne0.1')).toEqual({ lo: '0.05', hi: '0.15', hiInclusive: false })
    expect(range('-3')).toEqual({ lo: '-3.5', hi: '-2.5', hiInclusive: false })
  })

  test('gt lt ge le sa eb: the exact value', () => {
    for (const p of ['gt', 'lt', 'ge', 'le', 'sa', 'eb']) expect(range(`${p}100`)).toEqual({ lo: '100', hi: '100', hiInclusive: true })
    expect(range('gt0.30000000000000004').lo).toBe('0.30000000000000004')
  })

  test('ap: ±10%, at least the precision', () => {
    expect(range('ap100')).toEqual({ lo: '90.0', hi: '110.0', hiInclusive: true })
    expect(range('ap-20')).toEqual({ lo: '-22.0', hi: '-18.0', hiInclusive: true })
    expect(range('ap0')).toEqual({ lo: '-0.5', hi: '0.5', hiInclusive: true })
  })

  test('a bad prefix is HAPI-1235; a bad number is invalid', () => {
    const e = thrown(() => parseNumberSearch('xx100', 'probability'))
    expect(e.category).toBe('invalid')
    expect(e.message).toStartWith('HAPI-1235: ')
    expect(thrown(() => parseNumberSearch('gt', 'probability')).category).toBe('invalid')
    expect(thrown(() => parseNumberSearch('abc', 'probability')).category).toBe('invalid')
    expect(thrown(() => parseNumberSearch('1;drop table x', 'probability')).category).toBe('invalid')
  })
})
