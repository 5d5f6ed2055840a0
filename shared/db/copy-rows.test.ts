// Rows written with COPY come back as they were sent (nulls, empty strings, escapes, numbers, booleans,
// dates, raw JSON numbers, more than one chunk of text), and a COPY the server refuses rejects with the
// server's error, whether found mid-stream or at its end (a unique violation: retryOnCreateRace reads
// its code), leaving the connection usable.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createSql, type TxSql } from './client'
import { copyRows } from './copy-rows'

const sql = createSql(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', { max: 1 })
const table = `copy_rows_test_${process.pid}`
beforeAll(async () => {
  await sql`create table if not exists ${sql(table)} (k int primary key, s text, n numeric, b boolean, t timestamptz)`
})
afterAll(async () => {
  await sql`drop table if exists ${sql(table)}`
  await sql.end()
})

async function copied(rows: object[]): Promise<any[]> {
  return sql.begin(async (tx) => {
    await copyRows(tx as TxSql, table, ['k', 's', 'n', 'b', 't'], rows)
    const got = await tx`select k, s, n::text, b, t from ${tx(table)} order by k`
    await tx`delete from ${tx(table)}`
    return got
  })
}

describe('copyRows', () => {
  test('values come back as sent', async () => {
    const at = new Date('2024-02-03T04:05:06.789Z')
    const s = 'ümlaut ✓ "quoted" \\ back\tslash\nnew\r\nline \\N \\. end'
    const got = await copied([
      { k: 1, s, n: 1.5, b: true, t: at },
      { k: 2, s: '', n: JSON.rawJSON('1.50'), b: false, t: null },
      { k: 3, s: null, n: undefined, b: null, t: '2024-01-01T00:00:00Z' },
    ])
    expect(got).toEqual([
      { k: 1, s, n: '1.5', b: true, t: at },
      { k: 2, s: '', n: '1.50', b: false, t: null },
      { k: 3, s: null, n: null, b: null, t: new Date('2024-01-01T00:00:00Z') },
    ])
  })

  test('many rows, sent in several pieces', async () => {
    const rows = Array.from({ length: 3000 }, (_, i) => ({ k: i, s: 'x'.repeat(200 + (i % 7)), n: i / 4, b: i % 2 === 0, t: null }))
    const got = await copied(rows)
    expect(got.length).toBe(3000)
    expect(got[2999]).toMatchObject({ k: 2999, s: 'x'.repeat(200 + (2999 % 7)), n: '749.75', b: false })
  })

  test('a unique violation rejects with its code, at the end or mid-stream; the connection goes on', async () => {
    for (const rows of [
      [{ k: 1 }, { k: 1 }],
      [{ k: 1 }, { k: 1 }, ...Array.from({ length: 5000 }, (_, i) => ({ k: i + 2, s: 'y'.repeat(300) }))],
    ]) {
      const err = await sql
        .begin((tx) => copyRows(tx as TxSql, table, ['k', 's'], rows))
        .then(
          () => undefined,
          (e) => e,
        )
      expect(err?.code).toBe('23505')
      const [{ n }] = await sql`select count(*)::int as n from ${sql(table)}`
      expect(n).toBe(0)
    }
  })

  test('no rows: nothing sent', async () => {
    expect(await copied([])).toEqual([])
  })
})
