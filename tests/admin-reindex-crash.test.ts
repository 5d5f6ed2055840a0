// A worker killed (SIGKILL) in the middle of a $reindex job, in the cluster form (API and workers as
// separate processes): a new worker takes the stalled job over (the admin queue's lock lasts 10 s) and
// resumes from the last committed checkpoint, so the job finishes with exactly `total` processed (a
// redone batch would count twice, a skipped one would leave it short) and every resource indexed.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { createSql, type Sql } from '../shared/db/client'
import { syntheaFiles } from './load-data'
import { ADMIN_KEY } from './harness'

const ROOT = resolve(import.meta.dir, '..')
const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const DB = `test_reindex_crash_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
const DATABASE_URL = (() => {
  const u = new URL(PG)
  u.pathname = `/${DB}`
  return u.toString()
})()

const procs: Subprocess[] = []
let env: Record<string, string | undefined>
let base = ''
let sql: Sql

function spawn(script: string): Subprocess {
  const p = Bun.spawn(['bun', 'run', script], { cwd: ROOT, env, stdout: 'ignore', stderr: 'inherit' })
  procs.push(p)
  return p
}

const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/fhir+json' }

beforeAll(async () => {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() })
  const port = probe.port
  probe.stop(true)
  env = {
    ...process.env,
    DATABASE_URL,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: DB,
    ADMIN_API_KEY: ADMIN_KEY,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
    DB_POOL_MAX: '5',
  }
  base = `http://127.0.0.1:${port}`
  spawn('api/main.ts')
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) break
    } catch {}
    if (i > 200) throw new Error('API node did not start')
    await Bun.sleep(50)
  }
  sql = createSql(DATABASE_URL, { max: 2 })
})

afterAll(async () => {
  await sql?.end()
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM')
  await Promise.all(procs.map((p) => Promise.race([p.exited, Bun.sleep(10_000)])))
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
  const admin = createSql(PG, { max: 1 })
  await admin`drop database if exists ${admin(DB)} with (force)`
  await admin.end()
})

async function job(id: string): Promise<any> {
  return (await fetch(`${base}/admin/jobs/${id}`, { headers })).json()
}

test('a worker killed mid-reindex: a new worker resumes from the checkpoint and finishes with exact counts', async () => {
  const first = spawn('workers/main.ts')
  for (const file of syntheaFiles(12)) {
    const res = await fetch(`${base}/fhir`, { method: 'POST', headers, body: await Bun.file(file).text() })
    expect(res.status).toBe(200)
    await res.arrayBuffer()
  }

  // A custom parameter over every Observation's status: only a complete reindex makes all of them findable.
  const sp = {
    resourceType: 'SearchParameter',
    url: 'http://example.org/SearchParameter/obs-state',
    name: 'obs-state',
    status: 'active',
    code: 'obs-state',
    base: ['Observation'],
    type: 'token',
    expression: 'Observation.status',
    description: 'Observation status, again',
  }
  expect((await fetch(`${base}/fhir/SearchParameter`, { method: 'POST', headers, body: JSON.stringify(sp) })).status).toBe(201)
  const [{ n: total }] = await sql<{ n: number }[]>`select count(*)::int as n from resource where not deleted`
  expect(total).toBeGreaterThan(3000)
  const [{ n: observations }] = await sql<{ n: number }[]>`select count(*)::int as n from resource where res_type = 'Observation' and not deleted`

  const res = await fetch(`${base}/fhir/$reindex`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'batchSize', valueInteger: 50 }] }),
  })
  expect(res.status).toBe(200)
  const id = ((await res.json()) as any).parameter[0].valueString

  // Kill the worker once some batches are committed and many are left.
  let atKill: any
  for (const started = Date.now(); Date.now() - started < 60_000; await Bun.sleep(5)) {
    const [row] = await sql`select processed::int, total::int, state from admin_job where id = ${id}`
    if (row.state !== 'running' && row.state !== 'queued') throw new Error(`job ${row.state} before the kill`)
    if (row.processed >= 200) {
      first.kill('SIGKILL')
      await first.exited
      atKill = row
      break
    }
  }
  expect(atKill).toBeDefined()
  expect(atKill.processed).toBeLessThan(atKill.total)
  await Bun.sleep(300)
  const [{ processed: afterKill }] = await sql`select processed::int from admin_job where id = ${id}`
  expect(afterKill).toBeLessThan(total) // the job stopped with the worker

  spawn('workers/main.ts')
  let done: any
  for (const started = Date.now(); Date.now() - started < 90_000; await Bun.sleep(200)) {
    const j = await job(id)
    if (j.state !== 'running' && j.state !== 'queued') {
      done = j
      break
    }
  }
  expect(done).toMatchObject({ state: 'completed', total, processed: total, result: { reindexed: total } })
  const search = await fetch(`${base}/fhir/Observation?obs-state=final,amended,preliminary,registered,corrected,cancelled,entered-in-error,unknown&_summary=count&_total=accurate`, { headers })
  expect(((await search.json()) as any).total).toBe(observations)
}, 180_000)
