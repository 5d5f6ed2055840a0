// The cluster form: keys and organization keys made by the CLI (on DATABASE_URL) while two API nodes run
// are accepted by both at once, and refused by both when the CLI revokes them, though each node had just
// verified and cached them for 10 minutes (KEY_CACHE_MS): only the NOTIFY on key_changes, which reaches a
// node a moment after the CLI's commit, can make them forget (shared/auth/key-changes.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { runCli } from './embedded-process'
import { ADMIN_KEY, TEST_ENCRYPTION_KEY } from './harness'
import { answers, freePort, type Proc, spawnLogged, stop, waitFor } from './logged-process'
import { ROOT } from './embedded-process'
import { createMigratedDatabase, databaseUrl, dropDatabase } from './test-database'

const db = `test_keychg_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
const procs: Proc[] = []
const bases: string[] = []
const env: Record<string, string> = {
  DATABASE_URL: databaseUrl(db),
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  QUEUE_PREFIX: db,
  ADMIN_API_KEY: ADMIN_KEY,
  TOKEN_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
  HOST: '127.0.0.1',
  LOG_LEVEL: 'error',
  DB_POOL_MAX: '3',
  KEY_CACHE_MS: '600000',
}

beforeAll(async () => {
  // The database exists (test-database.ts), so the two nodes start together.
  await createMigratedDatabase(db)
  const nodes = [0, 1].map((i) => {
    const port = freePort()
    bases.push(`http://127.0.0.1:${port}`)
    return spawnLogged(procs, ROOT, `api-${i}`, ['bun', 'run', 'api/main.ts'], { ...env, PORT: String(port) })
  })
  await Promise.all(nodes.map((p, i) => waitFor(p, 'health', answers(`${bases[i]}/healthz`), 40_000)))
}, 90_000)

afterAll(async () => {
  await Promise.all(procs.map((p) => stop(p)))
  await dropDatabase(db)
})

const cli = (script: string, ...args: string[]) => runCli(script, args, { ...(process.env as Record<string, string>), ...env })
/** The status a node answers once the notification reached it (a guard against a hang, not a speed figure). */
async function settles(base: string, path: string, key: string, status: number): Promise<number> {
  let last = 0
  for (const until = Date.now() + 20_000; Date.now() < until; await Bun.sleep(20)) if ((last = await get(base, path, key)) === status) break
  return last
}
const get = (base: string, path: string, key: string) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status)

describe('keys made by the CLI while two API nodes run', () => {
  test('a FHIR API key: both nodes accept it at once, and refuse it once told of its revocation', async () => {
    const created = await cli('bin/keys.ts', 'create', 'cluster-cli', 'read')
    expect(created.code).toBe(0)
    const key = /(fk_\S+)/.exec(created.out)?.[1] as string
    const id = /created key (\d+)/.exec(created.out)?.[1] as string
    for (const base of bases) expect(await get(base, '/fhir/Patient?_count=1', key)).toBe(200)
    expect((await cli('bin/keys.ts', 'revoke', id)).code).toBe(0)
    for (const base of bases) expect(await settles(base, '/fhir/Patient?_count=1', key, 401)).toBe(401)
  }, 30_000)

  test("an organization's key: both nodes accept it at once, and refuse it once told of its revocation", async () => {
    const org = await cli('bin/orgs.ts', 'create', 'Cluster Health')
    const orgId = /created organization (\S+)/.exec(org.out)?.[1] as string
    const k = await cli('bin/orgs.ts', 'key-create', orgId, 'app')
    expect(k.code).toBe(0)
    const key = /(pk_\S+)/.exec(k.out)?.[1] as string
    const keyId = /created key (\S+)/.exec(k.out)?.[1] as string
    for (const base of bases) expect(await get(base, '/patients/nobody', key)).toBe(404)
    expect((await cli('bin/orgs.ts', 'key-revoke', orgId, keyId)).code).toBe(0)
    for (const base of bases) expect(await settles(base, '/patients/nobody', key, 401)).toBe(401)
  }, 30_000)
})
