// Migrations under the advisory lock: two nodes migrating a fresh database at once both succeed and
// every file is applied exactly once.
import { beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Sql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'
import { MIGRATION_FILES as FILES, useEmptyDatabase } from './test-database'

const db = useEmptyDatabase('test_mig')
const slow = useEmptyDatabase('test_mig_slow')
let a: Sql
let b: Sql

beforeAll(() => {
  a = db.pool({ max: 2 })
  b = db.pool({ max: 2 })
})

test('two concurrent migrate() calls on a fresh database both succeed, each file applied once', async () => {
  expect(FILES.length).toBeGreaterThan(0)
  const [fromA, fromB] = await Promise.all([migrate(a), migrate(b)])
  expect([...fromA, ...fromB].sort()).toEqual(FILES)
  const rows = await a<{ name: string; n: number }[]>`select name, count(*)::int as n from schema_migrations group by name order by name`
  expect(rows.map((r) => r.name)).toEqual(FILES)
  expect(rows.every((r) => r.n === 1)).toBe(true)
  // The schema is usable.
  const [t] = await a<{ n: number }[]>`select count(*)::int as n from resource`
  expect(t.n).toBe(0)
}, 120_000) // a fresh database, migrated: far longer than 30 s under load (harness.ts)

test('migrating again applies nothing', async () => {
  expect(await migrate(a)).toEqual([])
  const [{ n }] = await a<{ n: number }[]>`select count(*)::int as n from schema_migrations`
  expect(n).toBe(FILES.length)
})

test('every text column of the schema compares in collation "C" (0029): a later migration declares it', async () => {
  const rows = await a<{ col: string; coll: string }[]>`
    select a.attrelid::regclass::text || '.' || a.attname as col, a.attcollation::regcollation::text as coll
    from pg_attribute a join pg_class r on r.oid = a.attrelid and r.relkind in ('r', 'p')
    where r.relnamespace = current_schema()::regnamespace and a.attnum > 0 and not a.attisdropped
      and a.atttypid = 'text'::regtype`
  expect(rows.length).toBeGreaterThan(50)
  expect(rows.filter((r) => r.coll !== '"C"')).toEqual([])
})

test('migrations run without the pool statement budget: a long one finishes, a node waiting for the lock waits', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mig-'))
  writeFileSync(join(dir, '0001_slow.sql'), 'select pg_sleep(0.6);')
  // Budgets as a search node's (runtime.ts): shorter than the migration.
  const x = slow.pool({ max: 1, statementTimeoutMs: 200 })
  const y = slow.pool({ max: 1, statementTimeoutMs: 200 })
  try {
    const [fromX, fromY] = await Promise.all([migrate(x, dir), migrate(y, dir)])
    expect([...fromX, ...fromY]).toEqual(['0001_slow.sql'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('0029 keeps the lz4 compression of stored content and each table’s indexes in creation order', async () => {
  const compression = await a<{ c: string }[]>`
    select a.attcompression::text as c from pg_attribute a
    where a.attrelid in ('resource'::regclass, 'resource_history'::regclass) and a.attname = 'content'`
  const [lz4] = await a<{ ok: boolean }[]>`select 'lz4' = any(enumvals) as ok from pg_settings where name = 'default_toast_compression'`
  expect(compression.map((r) => r.c)).toEqual(lz4.ok ? ['l', 'l'] : ['', ''])
  // The order 0026 and 0028 made on purpose (the rid key after the lookup and the text key, 0026).
  const order = await a<{ name: string }[]>`
    select i.indexrelid::regclass::text as name from pg_index i where i.indrelid = 'idx_token'::regclass order by i.indexrelid`
  expect(order.map((r) => r.name)).toEqual(['idx_token_lookup', 'idx_token_text', 'idx_token_rid', 'idx_token_rid_order'])
})
