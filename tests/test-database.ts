// A fresh database for a test server, copied from a template that holds every migration: CREATE DATABASE
// ... TEMPLATE copies the template's files instead of running the migrations again for each of the
// suite's servers. The template is built once per set of migrations (its name carries their hash) and
// kept for the next run; the server's start still runs migrate(), which then finds nothing to apply.
// tests/migrations*.test.ts start from empty databases.
import { afterAll, beforeAll } from 'bun:test'
import { createHash } from 'node:crypto'
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSql, type Sql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'

export const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const MIGRATIONS = join(import.meta.dir, '..', 'sql', 'migrations')
/** The migration files, in the order migrate() applies them. */
export const MIGRATION_FILES = readdirSync(MIGRATIONS)
  .filter((f) => f.endsWith('.sql'))
  .sort()

/** The URL of database `name` on the tests' PostgreSQL. */
export function databaseUrl(name: string): string {
  const u = new URL(PG)
  u.pathname = `/${name}`
  return u.toString()
}

/** Creates database `name` with every migration applied. */
export async function createMigratedDatabase(name: string): Promise<void> {
  const template = await migratedTemplate()
  await withAdmin((admin) => admin`create database ${admin(name)} template ${admin(template)}`)
}

/** Drops database `name`, closing its connections. */
export async function dropDatabase(name: string): Promise<void> {
  await withAdmin((admin) => admin`drop database if exists ${admin(name)} with (force)`)
}

/**
 * An empty database (no migration applied) for one test file: created before its tests, dropped after
 * them with the pools opened on it (`pool`, in a hook or a test) and the folders `migrationsBefore` made
 * (the migrations before a file, to migrate a database as it was then).
 */
export function useEmptyDatabase(prefix: string): {
  pool(opts?: Parameters<typeof createSql>[1]): Sql
  migrationsBefore(file: string): string
} {
  const name = `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  const pools: Sql[] = []
  const dirs: string[] = []
  beforeAll(() => withAdmin((admin) => admin`create database ${admin(name)}`))
  afterAll(async () => {
    for (const p of pools) await p.end()
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
    await dropDatabase(name)
  })
  return {
    pool(opts = { max: 1 }) {
      const p = createSql(databaseUrl(name), opts)
      pools.push(p)
      return p
    },
    migrationsBefore(file) {
      const dir = mkdtempSync(join(tmpdir(), 'migrations-'))
      for (const f of MIGRATION_FILES.filter((f) => f < file)) copyFileSync(join(MIGRATIONS, f), join(dir, f))
      dirs.push(dir)
      return dir
    },
  }
}

let template: Promise<string> | undefined
const migratedTemplate = () => (template ??= buildTemplate())

/** A name for the current set of migrations (file names and contents), for what is built from them. */
export function migrationsHash(): string {
  const hash = createHash('sha256')
  for (const f of readdirSync(MIGRATIONS).sort()) hash.update(f).update(readFileSync(join(MIGRATIONS, f)))
  return hash.digest('hex').slice(0, 16)
}

async function buildTemplate(): Promise<string> {
  const name = `test_template_${migrationsHash()}`
  if (await exists(name)) return name
  // Built under a name of its own and renamed when complete: a build cut halfway is never used, and of
  // two processes building at once the first rename wins.
  const building = `${name}_${crypto.randomUUID().slice(0, 8)}`
  await withAdmin((admin) => admin`create database ${admin(building)}`)
  const sql = createSql(databaseUrl(building), { max: 1 })
  try {
    await migrate(sql)
  } finally {
    await sql.end()
  }
  for (const until = Date.now() + 15_000; ; ) {
    try {
      await withAdmin((admin) => admin`alter database ${admin(building)} rename to ${admin(name)}`)
      return name
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code === '42P04') break // built by another process meanwhile
      // 55006: the build's connection is still closing (up to 15 s on a loaded machine, not 50 tries of 20 ms).
      if (code !== '55006' || Date.now() > until) throw err
      await Bun.sleep(20)
    }
  }
  await dropDatabase(building)
  return name
}

async function exists(name: string): Promise<boolean> {
  return withAdmin(async (admin) => (await admin`select 1 from pg_database where datname = ${name}`).length > 0)
}

async function withAdmin<T>(fn: (admin: ReturnType<typeof createSql>) => Promise<T>): Promise<T> {
  const admin = createSql(PG, { max: 1 })
  try {
    return await fn(admin)
  } finally {
    await admin.end()
  }
}
