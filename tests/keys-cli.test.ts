// API keys from the command line, and the admin key printed once at the first start of a fresh database.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { createApiKey, listApiKeys } from '../shared/auth/api-keys'
import { createSql } from '../shared/db/client'
import { startTestServer, TEST_ENCRYPTION_KEY, type TestServer } from './harness'

const ROOT = join(import.meta.dir, '..')
let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
}, 120_000)
afterAll(async () => {
  await server.stop()
}, 120_000)

async function keysCli(...args: string[]): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(['bun', 'run', 'bin/keys.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: server.config.databaseUrl as string, TOKEN_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, LOG_LEVEL: 'error' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const out = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text())
  return { code: await proc.exited, out }
}

describe('bun run keys', () => {
  test('list orders keys by id as numbers (key 10 after key 9)', async () => {
    for (let i = 0; i < 12; i++) await createApiKey(server.sql, `order-${i}`, ['read'])
    const ids = (await listApiKeys(server.sql)).map((k) => Number(k.id))
    expect(ids.length).toBeGreaterThan(10)
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
  })

  test('create prints a key once; it works with its scopes', async () => {
    const { code, out } = await keysCli('create', 'reader', 'read')
    expect(code).toBe(0)
    const key = /(fk_\S+)/.exec(out)?.[1] as string
    expect(key).toBeDefined()
    expect((await server.fhirFetch('/Patient/nope', { key })).status).toBe(404)
    const post = await server.fhirFetch('/Patient', { key, method: 'POST', json: { resourceType: 'Patient' } })
    expect(post.status).toBe(403)
    const [row] = await server.sql`select key_hash from api_key where label = 'reader'`
    expect(row.key_hash).not.toContain(key) // stored hashed, never in clear
  }, 120_000)

  test('list shows keys without their secret; revoke disables a key', async () => {
    const created = await keysCli('create', 'to-revoke', 'read,write')
    const key = /(fk_\S+)/.exec(created.out)?.[1] as string
    const id = /created key (\d+)/.exec(created.out)?.[1] as string
    const list = await keysCli('list')
    expect(list.code).toBe(0)
    expect(list.out).toContain('to-revoke')
    expect(list.out).not.toContain(key)
    expect((await keysCli('revoke', id)).code).toBe(0)
    expect((await server.fhirFetch('/Patient/nope', { key })).status).toBe(401)
  }, 120_000)

  test('an unknown scope is refused', async () => {
    const { code, out } = await keysCli('create', 'bad', 'superuser')
    expect(code).not.toBe(0)
    expect(out).toContain('superuser')
  }, 120_000)
})

describe('first start of a fresh database', () => {
  test('prints an admin key that works', async () => {
    const db = `test_boot_${Date.now().toString(36)}`
    const url = `postgres://postgres@127.0.0.1:5432/${db}`
    const proc = Bun.spawn(['bun', 'run', 'api/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: url,
        REDIS_URL: 'redis://127.0.0.1:6379',
        TOKEN_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        PORT: '18431',
        LOG_LEVEL: 'error',
        ADMIN_API_KEY: '',
      },
      stdout: 'pipe',
      stderr: 'inherit',
    })
    try {
      const reader = proc.stdout.getReader()
      let out = ''
      while (!/FHIR base:/.test(out)) {
        const { value, done } = await reader.read()
        if (done) break
        out += new TextDecoder().decode(value)
      }
      const key = /(fk_\S+)/.exec(out)?.[1] as string
      expect(key).toBeDefined()
      const res = await fetch('http://127.0.0.1:18431/fhir/Patient', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/fhir+json' },
        body: JSON.stringify({ resourceType: 'Patient' }),
      })
      expect(res.status).toBe(201)
    } finally {
      proc.kill()
      await proc.exited
      const admin = createSql('postgres://postgres@127.0.0.1:5432/postgres', { max: 1 })
      await admin`drop database if exists ${admin(db)} with (force)`
      await admin.end()
    }
  }, 120_000)
})
