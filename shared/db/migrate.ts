// Applies sql/migrations/*.sql in name order, once each, under an advisory lock so that several
// nodes starting together are safe. Applied files are recorded in schema_migrations.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Sql } from './client'

const MIGRATIONS_DIR = join(import.meta.dir, '..', '..', 'sql', 'migrations')
const LOCK_KEY = 727_001 // arbitrary, constant for this program

export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
  const applied: string[] = []
  await sql.begin(async (tx) => {
    // No statement budget here (the pool's is a search's or a job's): a migration takes what it takes on a
    // large database, and a node waiting for another's migrations waits on the lock below.
    await tx`set local statement_timeout = 0`
    await tx`select pg_advisory_xact_lock(${LOCK_KEY})`
    await tx`create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())`
    // Not a prepared statement: a migration may change the table's columns (0029 their collation), and a
    // statement prepared on this connection before it would then fail ("cached plan must not change
    // result type") in the next migrate() of the process.
    const done = new Set((await tx.unsafe<{ name: string }[]>('select name from schema_migrations')).map((r) => r.name))
    for (const file of files) {
      if (done.has(file)) continue
      await tx.unsafe(readFileSync(join(dir, file), 'utf8')) // trusted file from the repository
      await tx`insert into schema_migrations (name) values (${file})`
      applied.push(file)
    }
  })
  return applied
}
