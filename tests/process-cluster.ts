// The cluster form for tests that kill processes: an API node and workers as separate `bun` processes on
// a fresh database (test-database.ts) and queue prefix, started before the file's tests and stopped (database dropped)
// after them.
import { afterAll, beforeAll } from 'bun:test'
import { resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { createSql, type Sql } from '../shared/db/client'
import { ADMIN_KEY, FAST_TAKEOVER, TEST_ENCRYPTION_KEY } from './harness'
import { createMigratedDatabase, databaseUrl, dropDatabase } from './test-database'

const ROOT = resolve(import.meta.dir, '..')
const START_TIMEOUT_MS = 60_000

export interface ProcessCluster {
  /** http://127.0.0.1:port of the API node. */
  base: string
  sql: Sql
  /** Starts `bun run <script>` (e.g. workers/main.ts) with the cluster's environment. */
  spawn(script: string): Subprocess
  /** The API node's process. */
  api: Subprocess
  /** A request to /fhir{path} with the admin key. */
  fhirFetch(path: string, init?: RequestInit): Promise<Response>
}

export function useProcessCluster(name: string, extraEnv: Record<string, string> = {}): ProcessCluster {
  const db = `test_${name}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  const procs: Subprocess[] = []
  let env: Record<string, string | undefined> = {}
  const cluster = {
    base: '',
    spawn(script: string) {
      const p = Bun.spawn(['bun', 'run', script], { cwd: ROOT, env, stdout: 'ignore', stderr: 'inherit' })
      procs.push(p)
      return p
    },
    fhirFetch(path: string, init: RequestInit = {}) {
      const headers = new Headers(init.headers)
      headers.set('authorization', `Bearer ${ADMIN_KEY}`)
      return fetch(`${cluster.base}/fhir${path}`, { ...init, headers })
    },
  } as ProcessCluster

  beforeAll(async () => {
    await createMigratedDatabase(db)
    const probe = Bun.serve({ port: 0, fetch: () => new Response() })
    const port = probe.port
    probe.stop(true)
    env = {
      ...process.env,
      DATABASE_URL: databaseUrl(db),
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: db,
      ADMIN_API_KEY: ADMIN_KEY,
      TOKEN_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      DB_POOL_MAX: '5',
      ...FAST_TAKEOVER,
      ...extraEnv,
    }
    cluster.base = `http://127.0.0.1:${port}`
    cluster.api = cluster.spawn('api/main.ts')
    // A start applies migrations and loads the R4 definitions: seconds on a quiet machine, several times
    // that when the machine is loaded, so the wait is long and ends early if the process has exited.
    const deadline = Date.now() + START_TIMEOUT_MS
    for (;;) {
      try {
        if ((await fetch(`${cluster.base}/healthz`)).ok) break
      } catch {}
      if (cluster.api.exitCode !== null) throw new Error(`API node exited with code ${cluster.api.exitCode}`)
      if (Date.now() > deadline) throw new Error(`API node did not start within ${START_TIMEOUT_MS} ms`)
      await Bun.sleep(50)
    }
    cluster.sql = createSql(databaseUrl(db), { max: 2 })
  }, START_TIMEOUT_MS + 5_000)

  afterAll(async () => {
    await cluster.sql?.end()
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM')
    await Promise.all(procs.map((p) => Promise.race([p.exited, Bun.sleep(10_000)])))
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
    await dropDatabase(db)
  })

  return cluster
}
