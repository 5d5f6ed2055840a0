// $export of a large row (over LARGE_ROW_BYTES) with the files in a folder (BULK_STORAGE_DIR), as the
// embedded form and a cluster with a shared folder keep them: the slices are written as chunk files, then
// the checkpoint (bulk-export-large.test.ts covers the files in PostgreSQL, where they commit together).
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SETTLE_MS } from '../shared/bulk/export-settle'
import { exportedByType, kickOff, manifestOf } from './bulk-http'
import { useTestServer } from './harness'

const dir = mkdtempSync(join(tmpdir(), 'bulk-export-large-dir-'))
const s = useTestServer({ BULK_STORAGE_DIR: dir })
const MB = 1024 * 1024

afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('a large row is written to the folder in slices and reads back whole', async () => {
  const big = { resourceType: 'Observation', id: 'big', status: 'final', code: { text: 'big' }, valueString: 'é'.repeat(5 * MB) }
  expect((await s.fhirFetch('/Observation/big', { method: 'PUT', json: big })).status).toBe(201)
  const stored = (await (await s.fhirFetch('/Observation/big')).json()) as any
  await Bun.sleep(SETTLE_MS + 200)
  const manifest = await manifestOf(await kickOff(s, '/$export?_type=Observation'))
  const [line] = (await exportedByType(manifest)).get('Observation') ?? []
  expect(line).toEqual(stored)
  const files = (function walk(d: string): string[] {
    return readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]))
  })(dir)
  // 10 MB of text in slices of 4 MB: three chunk files, none over a slice.
  expect(files.length).toBe(3)
  for (const f of files) expect(statSync(f).size).toBeLessThanOrEqual(4 * MB + 1)
}, 60_000)
