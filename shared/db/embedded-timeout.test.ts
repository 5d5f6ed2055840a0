// Why the embedded form applies no statement budget (README, Security, "Database time"): PGlite runs
// PostgreSQL in this JavaScript thread and raises its timeout signals from JavaScript timers, which
// cannot fire while a statement holds the thread, so `statement_timeout` never stops one. Should a
// PGlite release enforce it, this fails: then apply SEARCH/WRITE/JOB_STATEMENT_TIMEOUT_MS to the embedded
// pool too (runtime.ts, fhir/store.ts).
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { copyMigratedDataDir } from '../../tests/embedded-template'

test('PGlite does not enforce statement_timeout: a statement runs to its end', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fhir-pglite-timeout-'))
  copyMigratedDataDir(join(dir, 'pglite')) // PGlite's initdb skipped (tests/embedded-template.ts)
  const db = await PGlite.create(join(dir, 'pglite'))
  try {
    await db.exec('set statement_timeout = 50')
    const started = performance.now()
    const { rows } = await db.query<{ n: number }>('select count(*)::int as n from generate_series(1, 3000000)')
    const ms = performance.now() - started
    expect(rows[0].n).toBe(3_000_000)
    expect(ms).toBeGreaterThan(50) // it did outlast its budget, and was not stopped
  } finally {
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  }
}, 120_000)
