// Integration-test harness: the real app on a random port, over HTTP, against real PostgreSQL and Redis.
// Each test file gets a fresh database of its own (test-database.ts), dropped at the end.
import { afterAll, beforeAll, expect } from 'bun:test'
import { startApi } from '../api/main'
import { openRuntime } from '../shared/runtime'
import { startWorkers } from '../workers/main'
import { type Config, loadConfig } from '../shared/config'
import { createSql, type Sql } from '../shared/db/client'
import type { SecretCipher } from '../shared/secrets/cipher'
import { createMigratedDatabase, databaseUrl, dropDatabase } from './test-database'

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef'
/** The cluster form needs TOKEN_ENCRYPTION_KEY; the tests' servers share this one unless a test sets its own. */
export const TEST_ENCRYPTION_KEY = '5e'.repeat(32)
/**
 * The tests that kill workers take their jobs over within about 10 s rather than BullMQ's 30 to 60 s: each
 * job's lock lasts 8 s (renewed every second by a live worker) and dead workers' jobs are looked for every
 * second. A job whose worker is alive keeps its lock unless that worker's event loop stalls for 7 s (4 s
 * locks renewed at 2 s were lost by live workers in a full run at load 15).
 */
export const FAST_TAKEOVER = { JOB_LOCK_MS: '8000', JOB_STALLED_CHECK_MS: '1000' }

export interface TestServer {
  base: string
  fhir: string
  config: Config
  sql: Sql
  /** The server's own cipher (its keys), to read what it sealed. */
  cipher: SecretCipher
  /** fetch() against the FHIR base with the admin key and FHIR JSON by default. */
  fhirFetch(path: string, init?: RequestInit & { json?: unknown; key?: string | null }): Promise<Response>
  stop(): Promise<void>
}

export async function startTestServer(env: Record<string, string> = {}): Promise<TestServer> {
  const dbName = `test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  await createMigratedDatabase(dbName)
  const config = loadConfig({
    DATABASE_URL: databaseUrl(dbName),
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    PORT: '1',
    ADMIN_API_KEY: ADMIN_KEY,
    QUEUE_PREFIX: dbName,
    LOG_LEVEL: 'error',
    DB_POOL_MAX: '5',
    TOKEN_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    // Links patients follow are built on the server's own host and port (no PUBLIC_BASE_URL): the
    // address the tests reach it at.
    HOST: '127.0.0.1',
    ...env,
  })
  config.port = 0 // any free port
  // The all-in-one form: API and workers on one runtime, as `bun run start` runs them.
  const rt = await openRuntime(config)
  const workers = await startWorkers(config, rt)
  const api = await withQuietStdout(() => startApi(config, rt, workers.inProcess))
  const node = {
    port: api.port,
    async stop() {
      await api.stop()
      await workers.stop()
      await rt.close()
    },
  }
  const base = `http://127.0.0.1:${node.port}`
  const sql = createSql(databaseUrl(dbName), { max: 2 })
  return {
    base,
    fhir: `${base}/fhir`,
    config,
    sql,
    cipher: rt.cipher,
    fhirFetch(path, init = {}) {
      const headers = new Headers(init.headers)
      if (init.key !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${init.key ?? ADMIN_KEY}`)
      let body = init.body
      if (init.json !== undefined) {
        body = JSON.stringify(init.json)
        if (!headers.has('content-type')) headers.set('content-type', 'application/fhir+json')
      }
      return fetch(`${base}/fhir${path}`, { ...init, headers, body })
    },
    async stop() {
      await sql.end()
      await node.stop()
      await dropDatabase(dbName)
    },
  }
}

async function withQuietStdout<T>(fn: () => Promise<T>): Promise<T> {
  const write = process.stdout.write.bind(process.stdout)
  process.stdout.write = (() => true) as typeof process.stdout.write
  try {
    return await fn()
  } finally {
    process.stdout.write = write
  }
}

// Hooks and tests elsewhere that start a server themselves, or run the programs, take the same 120 s.
const SERVER_HOOK_TIMEOUT_MS = 120_000

/** A server for the whole test file: started before its tests, stopped (database dropped) after them. */
export function useTestServer(env: Record<string, string> = {}): TestServer {
  const holder = {} as TestServer
  // Creating and migrating a fresh database takes a second or two on a quiet machine and far longer under
  // load (15 s seen at load average 15): the hooks may take longer than a test.
  beforeAll(async () => {
    Object.assign(holder, await startTestServer(env))
  }, SERVER_HOOK_TIMEOUT_MS)
  afterAll(async () => {
    await holder.stop()
  }, SERVER_HOOK_TIMEOUT_MS)
  return holder
}

/** The JSON body of a response, untyped (FHIR resources are checked field by field). */
export const readJson = (res: Response): Promise<any> => res.json()

/** POSTs a resource, expects 201 and returns the stored resource. */
export async function createResource(s: TestServer, resource: any): Promise<any> {
  const res = await s.fhirFetch(`/${resource.resourceType}`, { method: 'POST', json: resource })
  expect(res.status).toBe(201)
  return res.json()
}
