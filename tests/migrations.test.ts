// Migrations under the advisory lock: two nodes migrating a fresh database at once both succeed and
// every file is applied exactly once.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { createSql, type Sql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const dbName = `test_mig_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
const FILES = readdirSync(join(import.meta.dir, '..', 'sql', 'migrations'))
  .filter((f) => f.endsWith('.sql'))
  .sort()

let a: Sql
let b: Sql

beforeAll(async () => {
  const admin = createSql(PG, { max: 1 })
  await admin`create database ${admin(dbName)}`
  await admin.end()
  const u = new URL(PG)
  u.pathname = `/${dbName}`
  a = createSql(u.toString(), { max: 2 })
  b = createSql(u.toString(), { max: 2 })
})

afterAll(async () => {
  await a?.end()
  await b?.end()
  const admin = createSql(PG, { max: 1 })
  await admin`drop database if exists ${admin(dbName)} with (force)`
  await admin.end()
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
})

test('migrating again applies nothing', async () => {
  expect(await migrate(a)).toEqual([])
  const [{ n }] = await a<{ n: number }[]>`select count(*)::int as n from schema_migrations`
  expect(n).toBe(FILES.length)
})
