// Migrations over a database that already holds data: 0015 gives existing token rows the Patient their
// resource references, and 0016 and 0017 compress resource content and a transaction job's recorded
// results with lz4 where PostgreSQL has it.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSql, type Sql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const dbName = `test_migdata_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
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
  // the schema as it was before 0015
  before = mkdtempSync(join(tmpdir(), 'migrations-'))
  for (const f of FILES.filter((f) => f < '0015')) copyFileSync(join(DIR, f), join(before, f))
})

afterAll(async () => {
  await sql?.end()
  rmSync(before, { recursive: true, force: true })
  const admin = createSql(PG, { max: 1 })
  await admin`drop database if exists ${admin(dbName)} with (force)`
  await admin.end()
})

test('0015 fills the patient of existing token rows from their resource’s references; 0016 and 0017 set lz4', async () => {
  await migrate(sql, before)
  // rid 1 references one patient, rid 2 two, rid 3 none (a Group)
  await sql`insert into idx_reference (rid, res_type, code, target_type, target_id) values
    (1, 'Observation', 'subject', 'Patient', 'p1'), (1, 'Observation', 'patient', 'Patient', 'p1'),
    (2, 'Observation', 'subject', 'Patient', 'p1'), (2, 'Observation', 'performer', 'Patient', 'p2'),
    (3, 'Observation', 'subject', 'Group', 'g1')`
  await sql`insert into idx_token (rid, res_type, code, system, value) values
    (1, 'Observation', 'code', 'http://loinc.org', '8302-2'), (2, 'Observation', 'code', 'http://loinc.org', '8302-2'),
    (3, 'Observation', 'code', 'http://loinc.org', '8302-2')`
  expect(await migrate(sql)).toEqual(FILES.filter((f) => f >= '0015'))
  const rows = await sql<{ rid: string; patient: string | null }[]>`select rid::text, patient from idx_token order by rid`
  expect([...rows]).toEqual([
    { rid: '1', patient: 'p1' },
    { rid: '2', patient: '*' },
    { rid: '3', patient: null },
  ])
  const [lz4] = await sql<{ ok: boolean }[]>`select 'lz4' = any(enumvals) as ok from pg_settings where name = 'default_toast_compression'`
  const compression = await sql<{ c: string }[]>`
    select a.attcompression::text as c from pg_attribute a
    where a.attrelid in ('resource'::regclass, 'resource_history'::regclass) and a.attname = 'content'`
  expect(compression.map((r) => r.c)).toEqual(lz4.ok ? ['l', 'l'] : ['', ''])
  const [results] = await sql<
    { c: string }[]
  >`select attcompression::text as c from pg_attribute where attrelid = 'bundle_job'::regclass and attname = 'results'`
  expect(results.c).toBe(lz4.ok ? 'l' : '')
})
