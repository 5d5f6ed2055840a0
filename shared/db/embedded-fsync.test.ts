// The embedded database forces its commits to disk (embedded-fsync.ts): PostgreSQL runs with fsync on and
// wal_sync_method=fsync, and each commit reaches fsync(2) on the host file. As PGlite is published, fsync
// is off and its Node file system has no fsync, so none is ever made.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../config'
import { createSql, type Sql } from './client'
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded'
import { embeddedFsyncCount } from './embedded-fsync'
import { copyMigratedDataDir } from '../../tests/embedded-template'

const dir = mkdtempSync(join(tmpdir(), 'fhir-fsync-'))
let pg: EmbeddedPostgres
let sql: Sql

beforeAll(async () => {
  copyMigratedDataDir(join(dir, 'pglite')) // PGlite's initdb skipped (tests/embedded-template.ts)
  pg = await startEmbeddedPostgres(join(dir, 'pglite'), '32MB', loadConfig({}).embeddedFsync)
  sql = createSql(pg.url, { max: 1 })
}, 180_000)

afterAll(async () => {
  await sql?.end()
  await pg?.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('by default, fsync is on and every commit is forced to disk', async () => {
  expect((await sql<{ fsync: string }[]>`show fsync`)[0].fsync).toBe('on')
  expect((await sql<{ wal_sync_method: string }[]>`show wal_sync_method`)[0].wal_sync_method).toBe('fsync')
  await sql`create table durable (id int primary key)`
  for (let i = 0; i < 5; i++) {
    const before = embeddedFsyncCount()
    await sql`insert into durable values (${i})`
    expect(embeddedFsyncCount()).toBeGreaterThan(before)
  }
})
