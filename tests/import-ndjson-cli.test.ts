// `bun run import --ndjson`: local NDJSON files uploaded in parts of whole lines and imported through the
// server's $import, with a progress bar, a summary per file, and the lines not stored named by file and
// line (exit code 1 then).
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { importNdjson, listNdjson } from '../bin/import-ndjson'
import { ADMIN_KEY, readJson, useTestServer } from './harness'

const ROOT = join(import.meta.dir, '..')
const s = useTestServer()
const dir = mkdtempSync(join(tmpdir(), 'ndjson-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const patients = Array.from({ length: 50 }, (_, i) => ({ resourceType: 'Patient', id: `cli-p${i}`, name: [{ family: `Cli${i}` }] }))

test('files uploaded in many parts come back whole: every resource stored, line numbers of the whole file', async () => {
  const path = join(dir, 'patients.ndjson')
  writeFileSync(path, `${patients.map((p) => JSON.stringify(p)).join('\n')}\n{"resourceType":"Patient","id":"cli-bad","colour":"red"}\n`)
  const files = await listNdjson([path])
  expect(files).toEqual([{ path, type: 'Patient', bytes: expect.any(Number) }])
  const report = await importNdjson(files, { url: s.fhir, key: ADMIN_KEY, partBytes: 300 }) // about 4 lines a part
  expect(report.files[0]).toMatchObject({ created: 50, errors: 1 })
  expect(report.errors).toEqual([{ path, line: 51, diagnostics: expect.stringContaining("Unrecognized element 'colour'") }])
  expect((await readJson(await s.fhirFetch('/Patient/cli-p49'))).name[0].family).toBe('Cli49')
})

test('the command: a folder of NDJSON, a summary, exit code 1 when a line was not stored', async () => {
  const folder = join(dir, 'folder')
  const { mkdirSync } = await import('node:fs')
  mkdirSync(folder)
  writeFileSync(
    join(folder, 'Observation.ndjson'),
    `${JSON.stringify({ resourceType: 'Observation', id: 'cli-o1', status: 'final', code: { text: 'x' } })}\nnot json\n`,
  )
  writeFileSync(join(folder, 'Practitioner.ndjson'), `${JSON.stringify({ resourceType: 'Practitioner', id: 'cli-doc' })}\n`)
  const proc = Bun.spawn(['bun', 'run', 'bin/import.ts', '--ndjson', folder, '--url', s.fhir, '--key', ADMIN_KEY], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  expect(code).toBe(1)
  expect(err).toContain('] 100%')
  expect(err).toContain(`NOT STORED ${join(folder, 'Observation.ndjson')}:2:`)
  expect(out).toContain('(Observation): 1 created, 0 updated, 0 unchanged, 1 not stored')
  expect(out).toContain('(Practitioner): 1 created')
  expect((await s.fhirFetch('/Practitioner/cli-doc')).status).toBe(200)
})
