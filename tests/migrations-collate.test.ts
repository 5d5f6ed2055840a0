// Migration 0029 (text columns in collation "C") over a database that holds data and statistics: a change
// of a column's type drops its statistics, so a table that had some is analysed again; one never analysed
// stays without any (the plans of a fresh load expect none).
import { beforeAll, expect, test } from 'bun:test'
import type { Sql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'
import { MIGRATION_FILES as FILES, useEmptyDatabase } from './test-database'

const db = useEmptyDatabase('test_migcoll')
let sql: Sql
let before: string

beforeAll(() => {
  sql = db.pool()
  before = db.migrationsBefore('0029')
})

test('0029 analyses again the tables that had statistics, and only those', async () => {
  await migrate(sql, before)
  await sql`insert into idx_token (rid, res_type, code, system, value)
    select g, 'Observation', 'code', 'http://loinc.org', (g % 50)::text from generate_series(1, 2000) g`
  await sql`insert into idx_uri (rid, res_type, code, value) select g, 'Observation', 'instantiates', 'urn:x' from generate_series(1, 100) g`
  await sql`analyze idx_token`
  const stats = (table: string, column: string) =>
    sql<{ n: number }[]>`select count(*)::int as n from pg_stats where tablename = ${table} and attname = ${column}`.then((r) => r[0].n)
  expect(await stats('idx_token', 'value')).toBe(1)
  expect(await migrate(sql)).toEqual(FILES.filter((f) => f >= '0029'))
  expect(await stats('idx_token', 'value')).toBe(1)
  expect(await stats('idx_token', 'code')).toBe(1)
  expect(await stats('idx_uri', 'code')).toBe(0)
  const [{ collation }] = await sql<{ collation: string }[]>`
    select collation_name as collation from information_schema.columns where table_name = 'idx_token' and column_name = 'value'`
  expect(collation).toBe('C')
}, 120_000) // a fresh database, migrated: far longer than 30 s under load (harness.ts)
