// Migrations over a database that already holds data: 0015 gives existing token rows the Patient their
// resource references, and 0016 and 0017 compress resource content and a transaction job's recorded
// results with lz4 where PostgreSQL has it.
import { beforeAll, expect, test } from 'bun:test'
import type { Sql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'
import { MIGRATION_FILES as FILES, useEmptyDatabase } from './test-database'

const db = useEmptyDatabase('test_migdata')
let sql: Sql
let before: string

beforeAll(() => {
  sql = db.pool()
  before = db.migrationsBefore('0015') // the schema as it was before 0015
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
}, 120_000) // a fresh database, migrated: far longer than 30 s under load (harness.ts)
