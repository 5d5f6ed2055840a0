// A PGlite data directory with every migration applied, copied into the embedded tests' temporary
// DATA_DIRs: a start on an empty folder runs PGlite's initdb and every migration in WebAssembly (68 s at
// load 13, 7.5-10 s in a quiet suite), a start on a migrated one only opens it. Built once per set of
// migrations and PGlite version (the folder's name carries both), by this file run as a script in a
// process of its own, and kept in the temporary folder for the next run. tests/embedded.test.ts still
// starts from an empty folder.
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSql } from '../shared/db/client'
import { startEmbeddedPostgres } from '../shared/db/embedded'
import { migrate } from '../shared/db/migrate'
import { migrationsHash } from './test-database'

const ROOT = join(import.meta.dir, '..')

/** Fills `dataDir` (not yet existing) with a copy of the migrated template. */
export function copyMigratedDataDir(dataDir: string): void {
  cpSync(migratedTemplate(), dataDir, { recursive: true })
}

let template: string | undefined

function migratedTemplate(): string {
  if (template) return template
  const pglite = JSON.parse(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version
  const dir = join(tmpdir(), `fhir-embedded-template-${migrationsHash()}-pglite-${pglite}`)
  if (!existsSync(dir)) {
    // Built beside and renamed when complete: a build cut halfway is never used; of two builds at once,
    // the first rename wins.
    const building = mkdtempSync(`${dir}-building-`)
    const built = Bun.spawnSync(['bun', 'run', import.meta.path, join(building, 'pglite')], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
    if (built.exitCode !== 0) {
      rmSync(building, { recursive: true, force: true })
      throw new Error(`building the embedded template failed:\n${built.stdout.toString()}${built.stderr.toString()}`)
    }
    try {
      renameSync(building, dir)
    } catch {
      rmSync(building, { recursive: true, force: true })
    }
  }
  return (template = join(dir, 'pglite'))
}

if (import.meta.main) {
  const db = await startEmbeddedPostgres(process.argv[2] as string, '32MB', false)
  const sql = createSql(db.url, { max: 1 })
  await migrate(sql)
  await sql.end()
  await db.stop()
}
