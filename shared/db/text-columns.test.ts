// Rows sent as text columns come back from PostgreSQL as they were sent: nulls, empty strings (also as
// the only row), numbers, booleans, dates, raw JSON numbers, and values that hold the separator itself.
import { afterAll, describe, expect, test } from 'bun:test'
import { createSql, type TxSql } from './client'
import { textColumns } from './text-columns'

const sql = createSql(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', { max: 1 })
afterAll(() => sql.end())

async function roundTrip(rows: object[], keys: string[]): Promise<(string | null)[][]> {
  const names = keys.map((_, i) => `c${i}`)
  const got = await sql`select * from ${textColumns(sql as unknown as TxSql, rows, keys)} as x(${sql(names)})`.values()
  return got as (string | null)[][]
}

describe('textColumns', () => {
  test('strings, nulls and empty strings keep their place, row order is kept', async () => {
    const rows = [
      { a: 'one', b: null, c: '' },
      { a: '', b: 'two', c: 'ümlaut ✓ "quoted" \\ back\tslash\nnewline' },
      { a: 'three', b: undefined, c: 'x' },
    ]
    expect(await roundTrip(rows, ['a', 'b', 'c'])).toEqual([
      ['one', null, ''],
      ['', 'two', 'ümlaut ✓ "quoted" \\ back\tslash\nnewline'],
      ['three', null, 'x'],
    ])
  })

  test('a single row whose only value is empty is one row with an empty string', async () => {
    expect(await roundTrip([{ a: '' }], ['a'])).toEqual([['']])
    expect(await roundTrip([{ a: null }], ['a'])).toEqual([[null]])
  })

  test('numbers, booleans and dates as PostgreSQL reads them; non-finite numbers are null', async () => {
    const at = new Date('2024-02-03T04:05:06.789Z')
    const rows = [{ n: 1.5, i: 7, big: 1e-7, inf: Number.POSITIVE_INFINITY, nan: Number.NaN, t: true, f: false, d: at, raw: JSON.rawJSON('1.50') }]
    const [row] = await roundTrip(rows, ['n', 'i', 'big', 'inf', 'nan', 't', 'f', 'd', 'raw'])
    expect(row).toEqual(['1.5', '7', '1e-7', null, null, 'true', 'false', '2024-02-03T04:05:06.789Z', '1.50'])
    const [[num, ts]] = await sql`select ${row[2]}::numeric::text, ${row[7]}::timestamptz = ${at} as same`.values()
    expect(num).toBe('0.0000001')
    expect(ts).toBe(true)
  })

  test('values holding the separator or equal to the null marker switch to another pair', async () => {
    const rows = [
      { a: 'x\u0001y', b: '\u0002' },
      { a: '\u0003', b: 'plain' },
    ]
    expect(await roundTrip(rows, ['a', 'b'])).toEqual([
      ['x\u0001y', '\u0002'],
      ['\u0003', 'plain'],
    ])
  })
})
