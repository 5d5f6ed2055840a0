import { describe, expect, test } from 'bun:test'
import { thrown as thrownBy } from '../../../../tests/data'
import type { AppError } from '../../../errors'
import { dateSearchBounds, parseDateSearch } from './date'

const bounds = (raw: string, now?: number) => dateSearchBounds(parseDateSearch(raw, 'date'), now)

const thrown = (f: () => unknown) => thrownBy<AppError>(f)

describe('date search values', () => {
  test('the range of each precision, half-open', () => {
    expect(bounds('2020')).toEqual(['2020-01-01T00:00:00.000Z', '2021-01-01T00:00:00.000Z'])
    expect(bounds('eq2020-02')).toEqual(['2020-02-01T00:00:00.000Z', '2020-03-01T00:00:00.000Z'])
    expect(bounds('gt2020-03-04')).toEqual(['2020-03-04T00:00:00.000Z', '2020-03-05T00:00:00.000Z'])
    expect(bounds('2020-03-04T10:00')).toEqual(['2020-03-04T10:00:00.000Z', '2020-03-04T10:01:00.000Z'])
    expect(bounds('2020-03-04T10:00:05')).toEqual(['2020-03-04T10:00:05.000Z', '2020-03-04T10:00:06.000Z'])
    expect(bounds('2020-03-04T10:00:05.250Z')).toEqual(['2020-03-04T10:00:05.250Z', '2020-03-04T10:00:05.251Z'])
  })

  test('a dateTime without zone is UTC; a zone shifts it; an unencoded + arrives as a space', () => {
    expect(bounds('2020-03-04T10:00:00')).toEqual(bounds('2020-03-04T10:00:00Z'))
    expect(bounds('2020-03-04T10:00:00-05:00')[0]).toBe('2020-03-04T15:00:00.000Z')
    expect(bounds('2020-03-04T10:00:00 01:00')[0]).toBe('2020-03-04T09:00:00.000Z')
    expect(parseDateSearch('le2020-03-04T10:00:00 01:00', 'date').prefix).toBe('le')
  })

  test('ends beyond the years 0001-9999 are infinite', () => {
    expect(bounds('9999')[1]).toBe('infinity')
    expect(bounds('ap0001', Date.parse('2020-01-01'))[0]).toBe('-infinity')
  })

  test('ap: 10% of the gap to now, at least a day either side', () => {
    const now = Date.parse('2020-01-01T00:00:00Z')
    // 10 years before now: widened by about a year
    const [lo, hi] = bounds('ap2010-01-01', now)
    expect(Date.parse(lo)).toBeCloseTo(Date.parse('2010-01-01') - 365.25 * 86_400_000, -8)
    expect(Date.parse(hi)).toBeCloseTo(Date.parse('2010-01-02') + 365.25 * 86_400_000, -8)
    // a moment ago: the one-day floor
    expect(bounds('ap2019-12-31T23:00:00Z', now)).toEqual(['2019-12-30T23:00:00.000Z', '2020-01-01T23:00:01.000Z'])
  })

  test('a bad prefix or a malformed date is invalid', () => {
    for (const bad of ['xx2020', '2020-13', '2020-02-30', 'gt', '20', 'yesterday', '2020-01-01T25:00', "2020'; drop table x"])
      expect(thrown(() => parseDateSearch(bad, 'date')).category).toBe('invalid')
  })

  test('a value without a time names calendar days; one with a time names none', () => {
    expect(parseDateSearch('2020', 'date').days).toEqual(['2020-01-01', '2020-12-31'])
    expect(parseDateSearch('lt2020-02', 'date').days).toEqual(['2020-02-01', '2020-02-29'])
    expect(parseDateSearch('ge2020-03-04', 'date').days).toEqual(['2020-03-04', '2020-03-04'])
    expect(parseDateSearch('2020-03-04T10:00', 'date').days).toBeUndefined()
  })
})
