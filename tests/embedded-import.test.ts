// $import in the embedded form (`bun run bin/start.ts` with no DATABASE_URL: PGlite, jobs in process),
// through `bun run import --ndjson` over HTTP. PGlite never answers COPY FROM STDIN over its socket, so
// the import there writes its rows with statements (shared/fhir/store.ts); with COPY it hung at 0 lines.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'

const ROOT = join(import.meta.dir, '..')
const KEY = 'embedded-import-key-0123456789abcdef'
/** A guard against a start or an import that hangs, not a speed figure. */
const GUARD_MS = 60_000

let dir = ''
let proc: Subprocess<'ignore', 'pipe', 'pipe'> | undefined
let base = ''
const output: string[] = []

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'embedded-import-'))
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = s.port
  s.stop(true)
  const env: Record<string, string | undefined> = { ...process.env, DATA_DIR: join(dir, 'data'), PORT: String(port), HOST: '127.0.0.1', ADMIN_API_KEY: KEY }
  delete env.DATABASE_URL
  delete env.REDIS_URL
  proc = Bun.spawn([process.execPath, 'run', 'bin/start.ts'], { cwd: ROOT, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const dec = new TextDecoder()
  for (const stream of [proc.stdout, proc.stderr])
    void (async () => {
      for await (const chunk of stream) output.push(dec.decode(chunk))
    })()
  base = `http://127.0.0.1:${port}`
  for (const until = performance.now() + GUARD_MS; performance.now() < until; await Bun.sleep(50)) {
    if (proc.exitCode !== null) throw new Error(`bin/start.ts exited (${proc.exitCode}):\n${output.join('')}`)
    if (
      await fetch(`${base}/fhir/metadata`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return
  }
  throw new Error(`bin/start.ts answered nothing within ${GUARD_MS} ms:\n${output.join('')}`)
}, GUARD_MS + 5_000)

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill('SIGTERM')
    const timer = setTimeout(() => proc?.kill('SIGKILL'), 10_000)
    await proc.exited
    clearTimeout(timer)
  }
  rmSync(dir, { recursive: true, force: true })
})

/** Runs `bun run import --ndjson <folder>` against the embedded server; killed past the guard. */
async function importFolder(folder: string): Promise<{ code: number | null; out: string }> {
  const cli = Bun.spawn(['bun', 'run', 'bin/import.ts', '--ndjson', folder, '--url', `${base}/fhir`, '--key', KEY], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => cli.kill('SIGKILL'), GUARD_MS)
  const [out, code] = await Promise.all([new Response(cli.stdout).text(), cli.exited])
  clearTimeout(timer)
  return { code, out }
}

test(
  'an import into the embedded form stores every resource with its index rows; run again, nothing changes',
  async () => {
    const folder = join(dir, 'ndjson')
    mkdirSync(folder)
    const patients = Array.from({ length: 30 }, (_, i) => ({ resourceType: 'Patient', id: `emb-p${i}`, name: [{ family: `Embedded${i}` }] }))
    // More lines than one batch (500), so that the pipeline holds several batches at once.
    const observations = Array.from({ length: 1200 }, (_, i) => ({
      resourceType: 'Observation',
      id: `emb-o${i}`,
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: i % 2 ? '8302-2' : '29463-7' }] },
      subject: { reference: `Patient/emb-p${i % 30}` },
    }))
    writeFileSync(join(folder, 'Patient.ndjson'), `${patients.map((p) => JSON.stringify(p)).join('\n')}\n`)
    writeFileSync(join(folder, 'Observation.ndjson'), `${observations.map((o) => JSON.stringify(o)).join('\n')}\n`)

    const first = await importFolder(folder)
    expect(first.code, `${first.out}\n${output.join('')}`).toBe(0)
    expect(first.out).toContain('(Observation): 1,200 created, 0 updated, 0 unchanged, 0 not stored')
    expect(first.out).toContain('(Patient): 30 created')

    const headers = { authorization: `Bearer ${KEY}` }
    const found: any = await (await fetch(`${base}/fhir/Observation?subject=Patient/emb-p7&code=http://loinc.org|8302-2&_summary=count`, { headers })).json()
    expect(found.total).toBe(40) // o7, o37, ... o1177: all odd, so all 8302-2
    const named: any = await (await fetch(`${base}/fhir/Patient?name=Embedded12`, { headers })).json()
    expect(named.entry?.map((e: any) => e.resource.id)).toEqual(['emb-p12'])

    const again = await importFolder(folder)
    expect(again.code).toBe(0)
    expect(again.out).toContain('(Observation): 0 created, 0 updated, 1,200 unchanged, 0 not stored')
  },
  3 * GUARD_MS,
)
