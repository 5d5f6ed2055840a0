import { describe, expect, test } from 'bun:test'
import { DATE_MAX, DATE_MIN, DAY_MAX, DAY_MIN, dateRange, extract } from './date'

const ctx = { code: 'date' }

describe('date ranges from precision', () => {
  test('year, month, day (UTC when no zone)', () => {
    expect(dateRange('2020')).toEqual(['2020-01-01T00:00:00.000Z', '2020-12-31T23:59:59.999Z'])
    expect(dateRange('2020-02')).toEqual(['2020-02-01T00:00:00.000Z', '2020-02-29T23:59:59.999Z'])
    expect(dateRange('2021-02')).toEqual(['2021-02-01T00:00:00.000Z', '2021-02-28T23:59:59.999Z'])
    expect(dateRange('2020-12-31')).toEqual(['2020-12-31T00:00:00.000Z', '2020-12-31T23:59:59.999Z'])
    expect(dateRange('0045-06-01')).toEqual(['0045-06-01T00:00:00.000Z', '0045-06-01T23:59:59.999Z'])
  })

  test('times: seconds, fractions, minutes, zones', () => {
    expect(dateRange('2011-11-21T03:43:05-05:00')).toEqual(['2011-11-21T08:43:05.000Z', '2011-11-21T08:43:05.999Z'])
    expect(dateRange('2015-02-07T13:28:17.239+02:00')).toEqual(['2015-02-07T11:28:17.239Z', '2015-02-07T11:28:17.239Z'])
    expect(dateRange('2015-02-07T13:28:17.2Z')).toEqual(['2015-02-07T13:28:17.200Z', '2015-02-07T13:28:17.299Z'])
    expect(dateRange('2015-02-07T13:28:17.123456Z')).toEqual(['2015-02-07T13:28:17.123Z', '2015-02-07T13:28:17.123Z'])
    expect(dateRange('2015-02-07T13:28Z')).toEqual(['2015-02-07T13:28:00.000Z', '2015-02-07T13:28:59.999Z'])
    expect(dateRange('2015-12-31T23:30:00-01:00')).toEqual(['2016-01-01T00:30:00.000Z', '2016-01-01T00:30:00.999Z'])
  })

  test('malformed values give no range', () => {
    for (const bad of ['', '20', '2020-13', '2020-02-30', '2020-01-01T25:00:00Z', 'daily', '2020-1-1']) expect(dateRange(bad)).toBeUndefined()
  })

  test('Period with open ends, Timing events and bounds; strings are not dates', () => {
    expect(
      extract(
        [
          { type: 'Period', value: { start: '2020-01-01' } },
          { type: 'Period', value: { end: '2020-01' } },
          { type: 'Period', value: {} },
          { type: 'Timing', value: { event: ['2020-03-02', '2020-03-01T10:00:00Z'] } },
          { type: 'Timing', value: { repeat: { boundsPeriod: { start: '2019', end: '2019-06' } } } },
          { type: 'Timing', value: { repeat: { boundsDuration: { value: 3 } } } },
          { type: 'string', value: '2020-01-01' },
          { type: 'instant', value: '2020-01-01T00:00:00.000Z' },
        ],
        ctx,
      ),
    ).toEqual([
      { code: 'date', lo: '2020-01-01T00:00:00.000Z', hi: DATE_MAX, loDay: '2020-01-01', hiDay: DAY_MAX },
      { code: 'date', lo: DATE_MIN, hi: '2020-01-31T23:59:59.999Z', loDay: DAY_MIN, hiDay: '2020-01-31' },
      { code: 'date', lo: '2020-03-01T10:00:00.000Z', hi: '2020-03-02T23:59:59.999Z', loDay: '2020-03-01', hiDay: '2020-03-02' },
      { code: 'date', lo: '2019-01-01T00:00:00.000Z', hi: '2019-06-30T23:59:59.999Z', loDay: '2019-01-01', hiDay: '2019-06-30' },
      { code: 'date', lo: '2020-01-01T00:00:00.000Z', hi: '2020-01-01T00:00:00.000Z', loDay: '2020-01-01', hiDay: '2020-01-01' },
    ])
  })

  test('the calendar days as written, the zone not considered (HAPI ordinal dates)', () => {
    const rows = extract(
      [
        { type: 'dateTime', value: '2012-02-12T00:49:45+01:00' },
        { type: 'dateTime', value: '2012-03-01T23:30:00-05:00' },
        { type: 'date', value: '2012-02' },
        { type: 'Timing', value: { event: ['2012-05-02T01:00:00+02:00', '2012-05-01T23:30:00Z'] } },
      ],
      ctx,
    )
    expect(rows.map((r) => [r.lo, r.loDay, r.hiDay])).toEqual([
      ['2012-02-11T23:49:45.000Z', '2012-02-12', '2012-02-12'],
      ['2012-03-02T04:30:00.000Z', '2012-03-01', '2012-03-01'],
      ['2012-02-01T00:00:00.000Z', '2012-02-01', '2012-02-29'],
      // the earliest instant (23:00Z on the 1st) was written as the 2nd; the days span both as written
      ['2012-05-01T23:00:00.000Z', '2012-05-01', '2012-05-02'],
    ])
  })
})
