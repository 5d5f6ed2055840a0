// A bulk import writes new resources' index rows with COPY (search/index/index-copy.ts), other writes as CTEs
// of one statement (index-store.ts, each type's insert). Both must write the same rows: the Synthea
// sample (every type, every third line) imported both ways into two databases, and every row of every
// index table compared, column by column, by its resource's type and id.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { writeSyntheaNdjson } from '../bench/synthea-ndjson'
import { readImportLine, writeImportBatch } from '../shared/bulk/import-batch'
import { loadConfig } from '../shared/config'
import { createSql, ensureDatabase, type Sql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'
import { INDEX_TABLES } from '../shared/fhir/search/index/index-store'
import { createRepo } from '../shared/fhir/store'

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const names = ['copy', 'cte'].map((w) => `test_import_${w}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`)
const urls = names.map((n) => {
  const u = new URL(PG)
  u.pathname = `/${n}`
  return u.toString()
})
const pools: Sql[] = []
const dir = mkdtempSync(join(tmpdir(), 'bulk-copy-'))

beforeAll(async () => {
  for (const url of urls) {
    await ensureDatabase(url)
    const sql = createSql(url, { max: 3 })
    await migrate(sql)
    pools.push(sql)
  }
}, 120_000) // a fresh database, migrated: far longer than 30 s under load (harness.ts)

afterAll(async () => {
  for (const sql of pools) await sql.end()
  const admin = createSql(PG, { max: 1 })
  for (const n of names) await admin`drop database if exists ${admin(n)} with (force)`
  await admin.end()
  rmSync(dir, { recursive: true, force: true })
})

test('COPY and the statement write the same index rows, table by table', async () => {
  const set = await writeSyntheaNdjson(1, dir)
  const lines = set.files.flatMap((f) =>
    readFileSync(f.path, 'utf8')
      .split('\n')
      .filter((l, i) => l !== '' && i % 3 === 0),
  )
  for (const [w, sql] of pools.entries()) {
    const repo = await createRepo(sql, loadConfig({ DATABASE_URL: urls[w] }))
    // The second database's repository has no COPY: every write takes the statement's CTEs.
    if (w === 1) (repo as any).collaborators.indexes.copyIndexes = undefined
    for (let i = 0; i < lines.length; i += 500) {
      const items = lines.slice(i, i + 500).map((text, j) => readImportLine({ text, number: i + j + 1, end: 0 }))
      await writeImportBatch(
        repo,
        items as { resource: any; key: string }[],
        () => {},
        async () => {},
      )
    }
  }
  const tables = [...INDEX_TABLES, 'resource_count']
  for (const table of tables) {
    const [copied, inserted] = await Promise.all(
      pools.map(async (sql) =>
        (table === 'resource_count'
          ? await sql`select res_type || ' ' || sum(n)::text as row from resource_count group by res_type`
          : await sql`select r.res_type || '/' || r.id || ' ' || (to_jsonb(i) - 'rid')::text as row from ${sql(table)} i join resource r using (rid)`
        )
          .map((r) => r.row as string)
          .sort(),
      ),
    )
    expect({ table, rows: copied }).toEqual({ table, rows: inserted })
    if (['idx_token', 'idx_reference', 'idx_date', 'idx_fulltext', 'idx_composite', 'resource_count'].includes(table)) expect(copied.length).toBeGreaterThan(0)
  }
}, 180_000)
