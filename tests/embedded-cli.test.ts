// The CLI while the embedded server runs, as real processes: `bun run keys` and `bun run orgs` send their
// command to the process that owns the data directory (its lock file's URL and token), so what they create
// works at once and what they revoke is refused at once; a tool that cannot go through the server refuses.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, type Embedded, embeddedEnv, runCli, startEmbedded, tempDataDir } from './embedded-process'
import { type Proc, stop } from './logged-process'

const procs: Proc[] = []
const dir = tempDataDir({ migrated: true })
let server: Embedded
let env: Record<string, string>

beforeAll(async () => {
  server = await startEmbedded(procs, dir.dataDir)
  env = embeddedEnv(dir.dataDir, { LOG_LEVEL: 'error' })
}, 60_000)

afterAll(async () => {
  for (const p of procs) await stop(p)
  dir.remove()
})

const keyOf = (out: string, prefix: string) => new RegExp(`(${prefix}\\S+)`).exec(out)?.[1] as string

describe('the CLI against a running embedded server', () => {
  test('bun run keys create: the key works at once; revoke: refused at once', async () => {
    const created = await runCli('bin/keys.ts', ['create', 'while-running', 'read'], env)
    expect(created.code).toBe(0)
    const key = keyOf(created.out, 'fk_')
    const id = /created key (\d+)/.exec(created.out)?.[1] as string
    expect((await call(server.base, '/fhir/Patient?_count=1', { key })).status).toBe(200)
    expect((await call(server.base, '/fhir/Patient', { key, method: 'POST', json: { resourceType: 'Patient' } })).status).toBe(403)
    const list = await runCli('bin/keys.ts', ['list'], env)
    expect(list.out).toContain('while-running')
    expect((await runCli('bin/keys.ts', ['revoke', id], env)).out).toContain(`revoked key ${id}`)
    expect((await call(server.base, '/fhir/Patient?_count=1', { key })).status).toBe(401)
  }, 30_000)

  test('bun run orgs: an organization, its key (works at once, refused at once once revoked), a source', async () => {
    const org = await runCli('bin/orgs.ts', ['create', 'Running Health'], env)
    expect(org.code).toBe(0)
    const orgId = /created organization (\S+)/.exec(org.out)?.[1] as string
    const k = await runCli('bin/orgs.ts', ['key-create', orgId, 'app'], env)
    expect(k.code).toBe(0)
    const key = keyOf(k.out, 'pk_')
    const keyId = /created key (\S+)/.exec(k.out)?.[1] as string
    const flow = () => call(server.base, '/patient-flows', { key, method: 'POST', json: { patient_id: 'cli_1', return_url: 'https://app.example/done' } })
    expect((await flow()).status).toBe(200)
    expect((await runCli('bin/orgs.ts', ['key-revoke', orgId, keyId], env)).code).toBe(0)
    expect((await flow()).status).toBe(401)
    const source = await runCli('bin/orgs.ts', ['source-add', 'Sandbox', 'https://ehr.example/fhir/r4'], env)
    expect(source.code).toBe(0)
    expect((await runCli('bin/orgs.ts', ['sources'], env)).out).toContain('https://ehr.example/fhir/r4')
    expect((await fetch(`${server.base}/healthz`)).ok).toBe(true)
    const listed: any = await (await call(server.base, '/admin/organizations')).json()
    expect(listed.data.map((o: any) => o.name)).toContain('Running Health')
  }, 40_000)

  test('a usage error is the command answer (exit 2), through the server', async () => {
    const res = await runCli('bin/orgs.ts', ['nonsense'], env)
    expect(res.code).toBe(2)
    expect(res.out).toContain('usage: bun run orgs')
  })

  test('/admin/cli takes only the local token, not an admin API key', async () => {
    const res = await call(server.base, '/admin/cli', { method: 'POST', json: { tool: 'keys', args: ['list'] } })
    expect(res.status).toBe(403)
  })

  test('bun run import with neither --url nor a key finds the running server and its local token', async () => {
    const file = join(dir.dataDir, '..', 'bundle.json')
    const family = `Imported${Date.now().toString(36)}`
    const bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [{ resource: { resourceType: 'Patient', name: [{ family }] }, request: { method: 'POST', url: 'Patient' } }],
    }
    writeFileSync(file, JSON.stringify(bundle))
    const res = await runCli('bin/import.ts', [file], { ...env, ADMIN_API_KEY: '', FHIR_API_KEY: '' })
    expect(res.code).toBe(0)
    const found: any = await (await call(server.base, `/fhir/Patient?family=${family}&_summary=count`)).json()
    expect(found.total).toBe(1)
  }, 30_000)

  test('bun run secrets, which opens the database itself, refuses naming the owner', async () => {
    const res = await runCli('bin/secrets.ts', ['rotate'], env)
    expect(res.code).toBe(2)
    expect(res.out).toContain(`in use by process ${server.proc.pid}`)
  })
})
