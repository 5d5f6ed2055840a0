// Migration 0029 (text columns in collation "C") over a database that holds data and statistics: a change
// of a column's type drops its statistics, so a table that had some is analysed again; one never analysed
// stays without any (the plans of a fresh load expect none).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSql, type Sql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const dbName = `test_migcoll_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
const DIR = join(import.meta.dir, '..', 'sql', 'migrations')
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith('.sql'))
  .sort()
let sql: Sql
let before: string

beforeAll(async () => {
  const admin = createSql(PG, { max: 1 })
  await admin`create database ${admin(dbName)}`
  await admin.end()
  const u = new URL(PG)
  u.pathname = `/${dbName}`
  sql = createSql(u.toString(), { max: 1 })
  before = mkdtempSync(join(tmpdir(), 'migrations-'))
  for (const f of FILES.filter((f) => f < '0029')) copyFileSync(join(DIR, f), join(before, f))
})

afterAll(async () => {
  await sql?.end()
  rmSync(before, { recursive: true, force: true })
  const admin = createSql(PG, { max: 1 })
  await admin`drop database if exists ${admin(dbName)} with (force)`
  await admin.end()
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
})
