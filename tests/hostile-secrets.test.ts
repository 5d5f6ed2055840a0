// Secrets the database alone cannot open (issue 19), against the real app over HTTP: after a connect
// flow, a webhook (its secret in an idempotent answer too) and a source with a client secret, a dump of
// the whole database holds none of the secrets in plain text, nor the key, and nothing in it opens what
// is sealed. Earlier rows (plain text, or sealed under the key once derived from server_secret) are
// sealed at the next start. Rotation: a retired key still opens, `bun run secrets rotate` re-encrypts
// under the new one, after which the old key alone opens nothing. The cluster form does not start
// without TOKEN_ENCRYPTION_KEY; the embedded form keeps its key in a 0600 file beside the data.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, chmodSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../shared/config'
import { SecretCipher } from '../shared/secrets/cipher'
import { keyFileOf, loadKeys, secretKey } from '../shared/secrets/keys'
import { SECRET_COLUMNS } from '../shared/secrets/stored-secrets'
import { startTestServer, TEST_ENCRYPTION_KEY, type TestServer } from './harness'
import { call, type Org } from './patients-client'
import { LOCAL_EHR, startTestEhr, type TestEhr } from './support/test-ehr'
import { createFlow, flowConnections, pressConnect, setupConnect, syncDone, throughEhr, waitFor } from './support/test-ehr-flow'
import { type Receiver, startReceiver } from './support/test-ehr-receiver'
import { verifySignature } from '../shared/webhooks/signature'

const ROOT = join(import.meta.dir, '..')
const KEY_A = TEST_ENCRYPTION_KEY
const KEY_B = 'b7'.repeat(32)
const ENV = { ...LOCAL_EHR, CONNECT_RESYNC_INTERVAL_MS: '0', WEBHOOK_RETRY_DELAYS_MS: '0' }

let s: TestServer
let ehr: TestEhr
let hooks: Receiver
let org: Org
let setup: Awaited<ReturnType<typeof setupConnect>>
/** Secrets as their owners know them, none of which may appear in the database. */
const plain: string[] = []
let conn: any

beforeAll(async () => {
  s = await startTestServer(ENV)
  ehr = await startTestEhr()
  ehr.decision = 'approve'
  hooks = startReceiver()
  setup = await setupConnect(s, ehr)
  org = setup.org
  plain.push(ehr.clientSecret as string)
}, 120_000)
afterAll(async () => {
  hooks?.stop()
  await ehr?.stop()
  await s?.stop()
}, 120_000)

/** Every row of every table of the database, as text: what a dump holds. */
async function dump(sql: TestServer['sql']): Promise<string> {
  const tables = await sql<
    { table_name: string }[]
  >`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`
  const parts: string[] = []
  for (const { table_name } of tables) for (const r of await sql<{ t: string }[]>`select t::text as t from ${sql(table_name)} t`) parts.push(r.t)
  return parts.join('\n')
}

/** Every sealed value of the secret columns. */
async function sealedValues(sql: TestServer['sql']): Promise<{ where: string; value: string }[]> {
  const out: { where: string; value: string }[] = []
  for (const c of SECRET_COLUMNS) {
    const rows = await sql<{ v: string }[]>`select ${sql(c.column)} as v from ${sql(c.table)} where ${sql(c.column)} is not null`
    for (const r of rows) out.push({ where: `${c.table}.${c.column}`, value: r.v })
  }
  return out
}

describe('at rest', () => {
  test('a connect flow, a webhook and a source leave every secret column sealed', async () => {
    const created = await call(s, org, '/webhooks', { method: 'POST', json: { url: hooks.url, events: ['*'] }, headers: { 'idempotency-key': 'wh-1' } })
    const wh = (await created.json()) as any
    plain.push(wh.secret)
    const flow = await createFlow(s, org, { patient_id: 'secret-patient' })
    await throughEhr(await pressConnect(flow, setup.source.id))
    conn = (await flowConnections(s, org, flow.id))[0]
    expect((await syncDone(s, org, 'secret-patient', conn.id)).sync.status).toBe('succeeded')
    await pressConnect(flow, setup.source.id) // an attempt left pending: its PKCE verifier stays stored
    plain.push(...ehr.secrets)
    expect(ehr.secrets.length).toBeGreaterThanOrEqual(3) // access token, refresh token, verifier

    const sealed = await sealedValues(s.sql)
    const where = new Set(sealed.map((x) => x.where))
    for (const c of SECRET_COLUMNS) expect(where).toContain(`${c.table}.${c.column}`)
    for (const { where, value } of sealed) {
      expect({ where, sealed: value.startsWith(`v2.${s.cipher.currentKeyId}.`) }).toEqual({ where, sealed: true })
      plain.push(s.cipher.open(value))
    }
  })

  test('a dump of the database holds none of them, nor the key', async () => {
    const text = await dump(s.sql)
    expect(text.length).toBeGreaterThan(10_000)
    for (const secret of plain) expect({ secret, found: text.includes(secret) }).toEqual({ secret, found: false })
    const key = Buffer.from(KEY_A, 'hex')
    for (const form of [KEY_A, key.toString('base64'), key.toString('base64url')]) expect(text.includes(form)).toBe(false)
  })

  test('nothing in the database opens them: not server_secret (the key once derived from it), nor any value there as a key', async () => {
    const rows = await s.sql<{ value: string }[]>`select value from server_secret`
    expect(rows.length).toBeGreaterThan(0)
    const candidates: Buffer[] = []
    for (const { value } of rows) {
      candidates.push(Buffer.from(hkdfSync('sha256', value, 'fhir-platform', 'source-token-encryption', 32)))
      for (const b of [Buffer.from(value, 'base64url'), Buffer.from(value, 'hex'), Buffer.from(value)]) if (b.length === 32) candidates.push(b)
    }
    const fromDb = candidates.map((k) => new SecretCipher({ current: secretKey(k), retired: [], source: 'key file' }))
    // Even told the key id, a cipher holding these keys under that id opens nothing.
    const posing = candidates.map((k) => new SecretCipher({ current: { id: s.cipher.currentKeyId, key: k }, retired: [], source: 'key file' }))
    for (const { value } of await sealedValues(s.sql)) for (const c of [...fromDb, ...posing]) expect(() => c.open(value)).toThrow('cannot be opened')
  })
})

describe('rows from before', () => {
  test('plain text and the database-derived v1 form are sealed under the key at the next start', async () => {
    const [paging] = await s.sql<{ value: string }[]>`select value from server_secret where name = 'paging'`
    const legacy = Buffer.from(hkdfSync('sha256', paging.value, 'fhir-platform', 'source-token-encryption', 32))
    const v1 = (text: string) => {
      const iv = randomBytes(12)
      const c = createCipheriv('aes-256-gcm', legacy, iv)
      const data = Buffer.concat([c.update(text, 'utf8'), c.final()])
      return ['v1', iv.toString('base64url'), data.toString('base64url'), c.getAuthTag().toString('base64url')].join('.')
    }
    const [c0] = await s.sql<{ access_token: string; refresh_token: string }[]>`select access_token, refresh_token from connection where id = ${conn.id}`
    const access = s.cipher.open(c0.access_token)
    const refresh = s.cipher.open(c0.refresh_token)
    // The state an earlier version left: tokens under the derived key, the client secret and a verifier in plain text.
    await s.sql`update connection set access_token = ${v1(access)}, refresh_token = ${v1(refresh)} where id = ${conn.id}`
    await s.sql`update fhir_source set client_secret = 'legacy-plain-secret' where id = ${setup.source.id}`
    await s.sql`update connect_attempt set code_verifier = 'legacy-plain-verifier' where used_at is null`
    await s.sql`delete from secret_migration`
    const again = await startTestServer({ ...ENV, DATABASE_URL: s.config.databaseUrl as string })
    try {
      const [c1] = await s.sql<{ access_token: string; refresh_token: string }[]>`select access_token, refresh_token from connection where id = ${conn.id}`
      const [src] = await s.sql<{ client_secret: string }[]>`select client_secret from fhir_source where id = ${setup.source.id}`
      const attempts = await s.sql<{ code_verifier: string }[]>`select code_verifier from connect_attempt where used_at is null`
      expect(attempts.length).toBeGreaterThan(0)
      for (const v of [c1.access_token, c1.refresh_token, src.client_secret, ...attempts.map((a) => a.code_verifier)])
        expect(v).toStartWith(`v2.${s.cipher.currentKeyId}.`)
      expect([s.cipher.open(c1.access_token), s.cipher.open(c1.refresh_token)]).toEqual([access, refresh])
      expect(s.cipher.open(src.client_secret)).toBe('legacy-plain-secret')
      expect(attempts.map((a) => s.cipher.open(a.code_verifier))).toContain('legacy-plain-verifier')
      expect((await s.sql`select name from secret_migration`).map((r) => r.name)).toEqual(['sealed-under-configured-key'])
    } finally {
      await again.stop()
    }
    await s.sql`update fhir_source set client_secret = ${s.cipher.seal(ehr.clientSecret as string)} where id = ${setup.source.id}`
  }, 120_000)
})

async function secretsCli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(['bun', 'run', 'bin/secrets.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: s.config.databaseUrl as string, LOG_LEVEL: 'error', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const out = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text())
  return { code: await proc.exited, out }
}

describe('rotation', () => {
  const idB = secretKey(Buffer.from(KEY_B, 'hex')).id

  /** A second server on the same database with other keys; syncs the connection and delivers an event. */
  async function works(env: Record<string, string>): Promise<{ sync: any; verified: boolean }> {
    const other = await startTestServer({ ...ENV, DATABASE_URL: s.config.databaseUrl as string, ...env })
    try {
      await call(other, org, `/patients/secret-patient/connections/${conn.id}/sync`, { method: 'POST' })
      const done = await waitFor(async () => {
        const c = (await (await call(other, org, `/patients/secret-patient/connections/${conn.id}`)).json()) as any
        return c.sync.status === 'succeeded' || c.sync.status === 'failed' ? c : undefined
      })
      return { sync: done.sync, verified: true }
    } finally {
      await other.stop()
    }
  }

  test('new-key prints a fresh key', async () => {
    const { code, out } = await secretsCli({ TOKEN_ENCRYPTION_KEY: KEY_A }, 'new-key')
    expect(code).toBe(0)
    expect(out.trim()).toMatch(/^[0-9a-f]{64}$/)
  }, 120_000)

  test('a new key with the old one retired opens what the old one sealed; rotate re-encrypts everything', async () => {
    const before = await sealedValues(s.sql)
    expect(before.every((x) => x.value.startsWith(`v2.${s.cipher.currentKeyId}.`))).toBe(true)
    expect((await works({ TOKEN_ENCRYPTION_KEY: KEY_B, TOKEN_ENCRYPTION_RETIRED_KEYS: KEY_A })).sync).toMatchObject({ status: 'succeeded', error: null })

    const rotated = await secretsCli({ TOKEN_ENCRYPTION_KEY: KEY_B, TOKEN_ENCRYPTION_RETIRED_KEYS: KEY_A }, 'rotate')
    expect(rotated.code).toBe(0)
    expect(rotated.out).toContain(`all stored secrets are under key ${idB}`)
    const after = await sealedValues(s.sql)
    expect(after.length).toBe(before.length)
    for (const { where, value } of after) expect({ where, key: value.split('.')[1] }).toEqual({ where, key: idB })
    // A second rotate has nothing left to do.
    expect((await secretsCli({ TOKEN_ENCRYPTION_KEY: KEY_B }, 'rotate')).out).toContain('connection.access_token\t0 re-encrypted')
  }, 120_000)

  test('after rotation the new key alone works, and the old key alone opens nothing', async () => {
    expect((await works({ TOKEN_ENCRYPTION_KEY: KEY_B })).sync).toMatchObject({ status: 'succeeded', error: null })
    const stale = await works({ TOKEN_ENCRYPTION_KEY: KEY_A })
    expect(stale.sync.status).toBe('failed')
    expect(stale.sync.error).toContain(`sealed with key ${idB}, which is neither TOKEN_ENCRYPTION_KEY nor one of TOKEN_ENCRYPTION_RETIRED_KEYS`)
    const cipherA = new SecretCipher({ current: secretKey(Buffer.from(KEY_A, 'hex')), retired: [], source: 'TOKEN_ENCRYPTION_KEY' })
    for (const { value } of await sealedValues(s.sql)) expect(() => cipherA.open(value)).toThrow()
  }, 120_000)

  test('webhook deliveries are still signed with the same secret after rotation', async () => {
    const other = await startTestServer({ ...ENV, DATABASE_URL: s.config.databaseUrl as string, TOKEN_ENCRYPTION_KEY: KEY_B })
    try {
      const wh = ((await (await call(other, org, '/webhooks')).json()) as any).data[0]
      const res = await call(other, org, `/webhooks/${wh.id}/events`)
      const ev = ((await res.json()) as any).data[0]
      await call(other, org, `/events/${ev.id}/redeliver`, { method: 'POST' })
      const d = await waitFor(async () => hooks.deliveries.filter((x) => x.event.id === ev.id).at(-1))
      const secret = plain.find((p) => p.startsWith('whsec_')) as string
      expect(verifySignature(secret, d.signature, d.body)).toBe(true)
      // The idempotent answer (it holds that secret) replays, opened with the new key.
      const replay = await call(other, org, '/webhooks', { method: 'POST', json: { url: hooks.url, events: ['*'] }, headers: { 'idempotency-key': 'wh-1' } })
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(((await replay.json()) as any).secret).toBe(secret)
    } finally {
      await other.stop()
    }
  }, 120_000)
})

describe('where the key comes from', () => {
  test.each([['api/main.ts'], ['bin/start.ts'], ['workers/main.ts']])(
    'the cluster form (%s with DATABASE_URL) refuses to start without TOKEN_ENCRYPTION_KEY',
    async (script) => {
      const env: Record<string, string | undefined> = { ...process.env, DATABASE_URL: s.config.databaseUrl, REDIS_URL: 'redis://127.0.0.1:6379', PORT: '18499' }
      delete env.TOKEN_ENCRYPTION_KEY
      const proc = Bun.spawn(['bun', 'run', script], { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' })
      const guard = setTimeout(() => proc.kill(), 60_000) // its start alone took 8 s on a loaded core
      const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
      clearTimeout(guard)
      expect(code).toBe(2)
      expect(`${out}${err}`).toContain('TOKEN_ENCRYPTION_KEY is required when DATABASE_URL is set')
    },
    120_000,
  )

  test('the embedded form generates its key once into a 0600 file beside the data directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keys-'))
    try {
      const config = loadConfig({ DATA_DIR: join(dir, 'pglite') })
      const first = loadKeys(config)
      const file = keyFileOf(config.dataDir)
      expect(file).toBe(join(dir, 'pglite.key'))
      expect(statSync(file).mode & 0o777).toBe(0o600)
      expect(first.source).toBe('key file')
      expect(loadKeys(config).current).toEqual(first.current)
      // A key file others can read is made private again.
      chmodSync(file, 0o644)
      loadKeys(config)
      expect(statSync(file).mode & 0o777).toBe(0o600)
      // Moving to TOKEN_ENCRYPTION_KEY keeps the file's key as a retired one.
      const moved = loadKeys(loadConfig({ DATA_DIR: join(dir, 'pglite'), TOKEN_ENCRYPTION_KEY: KEY_B }))
      expect(moved.retired.map((k) => k.id)).toEqual([first.current.id])
      writeFileSync(file, 'not a key\n')
      expect(() => loadKeys(config)).toThrow('Invalid key file')
      expect(existsSync(join(dir, 'pglite'))).toBe(false) // nothing written into the data directory itself
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('TOKEN_ENCRYPTION_KEY and the retired keys are checked at start', () => {
    expect(() => loadConfig({ TOKEN_ENCRYPTION_KEY: 'short' })).toThrow('TOKEN_ENCRYPTION_KEY')
    expect(() => loadConfig({ TOKEN_ENCRYPTION_RETIRED_KEYS: `${KEY_A},nope` })).toThrow('TOKEN_ENCRYPTION_RETIRED_KEYS')
    expect(readFileSync(join(ROOT, 'package.json'), 'utf8')).toContain('"secrets": "bun run bin/secrets.ts"')
  })
})
