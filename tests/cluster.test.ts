// The cluster form on one machine, as real processes: two API nodes behind nginx (deploy/nginx.conf,
// round robin), BullMQ workers, PostgreSQL and Redis. Paging across nodes, transactions on a worker,
// a job watched from another node, an API node stopped under load, a worker killed mid-job (its job
// then fails rather than run again blindly).
// nginx comes from Debian (`apt-get install -y nginx`); this file installs nothing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import IORedis from 'ioredis'
import { createSql } from '../shared/db/client'
import { FAST_TAKEOVER, TEST_ENCRYPTION_KEY } from './harness'
import { answers, freePort, logged, type Proc, spawnLogged, stop, tail, waitFor } from './logged-process'

const ROOT = join(import.meta.dir, '..')
const KEY = 'cluster-admin-key-0123456789abcdef'
const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const NGINX = Bun.which('nginx', { PATH: `${process.env.PATH ?? ''}:/usr/sbin:/usr/local/sbin:/sbin` })
const NO_NGINX = 'nginx is not installed: the cluster test needs a real load balancer (apt-get install -y nginx)'

const RUN = `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const DB = `test_cluster_${RUN}`
const DATABASE_URL = Object.assign(new URL(PG), { pathname: `/${DB}` }).toString()

const procs: Proc[] = []
let dir = ''

/** The same environment for every process; only an API node has a PORT. */
function nodeEnv(port?: number): Record<string, string> {
  const env = {
    DATABASE_URL,
    REDIS_URL,
    ADMIN_API_KEY: KEY,
    TOKEN_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    QUEUE_PREFIX: RUN,
    HOST: '127.0.0.1',
    DB_POOL_MAX: '5',
    LOG_LEVEL: 'info',
    ...FAST_TAKEOVER,
  }
  return port ? { ...env, PORT: String(port) } : env
}

const spawn = (name: string, cmd: string[], env: Record<string, string> = {}) => spawnLogged(procs, ROOT, name, cmd, env)
const startApiNode = (name: string, port: number) => spawn(name, [process.execPath, 'run', 'api/main.ts'], nodeEnv(port))
const startWorker = (name: string) => spawn(name, [process.execPath, 'run', 'workers/main.ts'], nodeEnv())

// --- the cluster ------------------------------------------------------------------------------------

let portA = 0
let portB = 0
let portLb = 0
let nodeA: Proc
let nodeB: Proc
let worker: Proc
let nginx: Proc
let lb = ''
let direct: [string, string] = ['', '']

beforeAll(async () => {
  if (!NGINX) throw new Error(NO_NGINX)
  dir = mkdtempSync(join(tmpdir(), 'fhir-cluster-'))
  mkdirSync(join(dir, 'logs'))
  mkdirSync(join(dir, 'tmp'))
  ;[portA, portB, portLb] = [freePort(), freePort(), freePort()]
  // deploy/nginx.conf as shipped, on this run's ports.
  const conf = readFileSync(join(ROOT, 'deploy/nginx.conf'), 'utf8')
    .replace('127.0.0.1:8081', `127.0.0.1:${portA}`)
    .replace('127.0.0.1:8082', `127.0.0.1:${portB}`)
    .replace('listen 127.0.0.1:8080', `listen 127.0.0.1:${portLb}`)
  writeFileSync(join(dir, 'nginx.conf'), conf)

  direct = [`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`]
  lb = `http://127.0.0.1:${portLb}`
  // Node A creates the database; then node B and the worker start together and meet its migrations
  // under their advisory lock. (Not all three at once: two nodes creating the same database race in
  // ensureDatabase, which tolerates 42P04 but not the 23505 PostgreSQL raises for that race.)
  nodeA = startApiNode('api-a', portA)
  await waitFor(nodeA, '/readyz', answers(`${direct[0]}/readyz`))
  nodeB = startApiNode('api-b', portB)
  worker = startWorker('worker-1')
  nginx = spawn('nginx', [NGINX, '-p', dir, '-e', join(dir, 'logs/error.log'), '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'])
  await Promise.all([
    waitFor(nodeB, '/readyz', answers(`${direct[1]}/readyz`)),
    waitFor(worker, 'workers started', logged(worker, 'workers started')),
    waitFor(nginx, 'proxying', answers(`${lb}/healthz`)),
  ])
}, 40_000)

afterAll(async () => {
  await Promise.all(procs.map((p) => stop(p, p === nginx ? 'SIGQUIT' : 'SIGTERM')))
  const admin = createSql(PG, { max: 1 })
  try {
    await admin`drop database if exists ${admin(DB)} with (force)`
  } finally {
    await admin.end()
  }
  const redis = new IORedis(REDIS_URL, { maxRetriesPerRequest: 1 })
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${RUN}:*`, 'COUNT', 1000)
      if (keys.length) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
  if (dir) rmSync(dir, { recursive: true, force: true })
}, 30_000)

// --- HTTP -------------------------------------------------------------------------------------------

function call(base: string, path: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  headers.set('authorization', `Bearer ${KEY}`)
  if (init.json !== undefined) headers.set('content-type', 'application/fhir+json')
  const body = init.json !== undefined ? JSON.stringify(init.json) : init.body
  return fetch(path.startsWith('http') ? path : `${base}/fhir${path}`, { ...init, headers, body })
}

async function getJson(base: string, path: string): Promise<any> {
  const res = await call(base, path)
  if (res.status !== 200) throw new Error(`GET ${path} via ${base}: ${res.status} ${await res.text()}`)
  return res.json()
}

const nextLink = (bundle: any): string | undefined => bundle.link?.find((l: any) => l.relation === 'next')?.url
const onOrigin = (url: string, base: string) => base + new URL(url).pathname + new URL(url).search
const ids = (bundle: any): string[] => (bundle.entry ?? []).map((e: any) => e.resource.id)

async function inChunks<T, R>(items: T[], size: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = []
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))))
  return out
}

const patient = (system: string, value: string, family: string) => ({
  resourceType: 'Patient',
  identifier: [{ system, value }],
  name: [{ family, given: [value] }],
})

/** Every Patient with an identifier in `system`, as identifier value -> ids (paged through nginx). */
async function patientsBySystem(system: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>()
  let url: string | undefined = `/Patient?identifier=${encodeURIComponent(`${system}|`)}&_count=200`
  for (let pages = 0; url; pages++) {
    if (pages > 200) throw new Error('more than 200 pages')
    const bundle = await getJson(lb, url)
    for (const e of bundle.entry ?? []) {
      const value = e.resource.identifier.find((i: any) => i.system === system).value
      out.set(value, [...(out.get(value) ?? []), e.resource.id])
    }
    url = nextLink(bundle)
  }
  return out
}

const upstreamsOf = (line: string) => /upstream=(\S+)/.exec(line)?.[1]?.split(/[,:]\s*/) ?? []

// --- the checks -------------------------------------------------------------------------------------

describe('cluster: two API nodes behind nginx, workers, PostgreSQL, Redis', () => {
  test('search paging alternating nodes returns the complete result, without duplicates', async () => {
    const family = `Paging${RUN}`
    const created = await inChunks([...Array(50).keys()], 10, async (i) => {
      const res = await call(lb, '/Patient', { method: 'POST', json: patient(`urn:${RUN}:a`, `a-${i}`, family) })
      expect(res.status).toBe(201)
      return ((await res.json()) as any).id as string
    })
    const expected = [...created].sort()

    // Through nginx: the links lead back to the balancer (Host is passed on), round robin picks the node.
    const seen: string[] = []
    let pages = 0
    for (let url: string | undefined = `/Patient?family=${family}&_count=7`; url; pages++) {
      const bundle = await getJson(lb, url)
      seen.push(...ids(bundle))
      url = nextLink(bundle)
      if (url) expect(url.startsWith(`${lb}/fhir`)).toBe(true)
    }
    expect(pages).toBe(8)
    expect(seen.length).toBe(50)
    expect([...seen].sort()).toEqual(expected)
    // nginx's log names the node of each page: both served some.
    const pageLines = async () => {
      // nginx logs a request after answering it: give the last line a moment (up to 10 s on a loaded machine).
      for (const until = Date.now() + 10_000; Date.now() < until; await Bun.sleep(20)) {
        const lines = readFileSync(join(dir, 'logs/access.log'), 'utf8')
          .split('\n')
          .filter((l) => l.includes('_getpages'))
        if (lines.length >= pages - 1) return lines
      }
      throw new Error('nginx did not log the page requests')
    }
    const lines = await pageLines()
    const served = new Set(lines.flatMap(upstreamsOf).filter((x) => /^\d+$/.test(x)))
    expect(lines.length).toBe(7)
    expect([...served].sort()).toEqual([String(portA), String(portB)].sort())

    // Directly: page n from node n % 2, the links of one node served by the other.
    const alternating: string[] = []
    let bundle = await getJson(direct[0], `/Patient?family=${family}&_count=7`)
    alternating.push(...ids(bundle))
    for (let n = 1; nextLink(bundle); n++) {
      bundle = await getJson(direct[n % 2], onOrigin(nextLink(bundle) as string, direct[n % 2]))
      alternating.push(...ids(bundle))
    }
    expect(alternating.length).toBe(50)
    expect(new Set(alternating).size).toBe(50)
    expect([...alternating].sort()).toEqual(expected)
  })

  test('a transaction sent to one node is processed by a worker; the resources exist', async () => {
    const family = `Txn${RUN}`
    const res = await call(direct[0], '', {
      method: 'POST',
      json: {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          {
            fullUrl: 'urn:uuid:8c3ab4c6-0f53-4b8e-9a57-0f6b3b0d0001',
            resource: patient(`urn:${RUN}:b`, 'b-1', family),
            request: { method: 'POST', url: 'Patient' },
          },
          {
            resource: {
              resourceType: 'Observation',
              status: 'final',
              code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
              subject: { reference: 'urn:uuid:8c3ab4c6-0f53-4b8e-9a57-0f6b3b0d0001' },
              valueQuantity: { value: 180, unit: 'cm', system: 'http://unitsofmeasure.org', code: 'cm' },
            },
            request: { method: 'POST', url: 'Observation' },
          },
        ],
      },
    })
    // An API node of the cluster form has no processor: it queued the Bundle and waited for the worker.
    expect(res.status).toBe(200)
    const bundle: any = await res.json()
    expect(bundle.type).toBe('transaction-response')
    expect(bundle.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '201 Created'])
    const [patientPath, observationPath] = bundle.entry.map((e: any) => e.response.location.replace(/\/_history\/.*$/, ''))
    // Read back from the other node.
    const p = await getJson(direct[1], `/${patientPath}`)
    expect(p.name[0].family).toBe(family)
    const o = await getJson(direct[1], `/${observationPath}`)
    expect(o.subject.reference).toBe(patientPath)
  })

  test('a respond-async transaction submitted to node A is watched to completion from node B', async () => {
    const n = 300
    const entry = [...Array(n).keys()].map((i) => ({ resource: patient(`urn:${RUN}:c`, `c-${i}`, `Async${RUN}`), request: { method: 'POST', url: 'Patient' } }))
    const res = await call(direct[0], '', {
      method: 'POST',
      json: { resourceType: 'Bundle', type: 'transaction', entry },
      headers: { prefer: 'respond-async' },
    })
    expect(res.status).toBe(202)
    const location = res.headers.get('content-location') as string
    expect(location).toContain('$bundle-status?_jobId=')
    const onB = onOrigin(location, direct[1])
    const statuses: number[] = []
    let done: any
    for (const until = Date.now() + 20_000; Date.now() < until; await Bun.sleep(2)) {
      const s = await call(direct[1], onB)
      statuses.push(s.status)
      if (s.status === 202) {
        expect(s.headers.get('x-progress')).toBeTruthy()
        await s.body?.cancel()
        continue
      }
      if (s.status !== 200) throw new Error(`$bundle-status on node B: ${s.status} ${await s.text()}\n${tail(nodeB)}`)
      done = await s.json()
      break
    }
    expect(done?.type).toBe('transaction-response')
    expect(statuses[0]).toBe(202) // seen running (or queued) from the other node
    expect(done.entry.length).toBe(n)
    expect(done.entry.every((e: any) => e.response.status === '201 Created')).toBe(true)
    const count = await getJson(lb, `/Patient?identifier=${encodeURIComponent(`urn:${RUN}:c|`)}&_summary=count`)
    expect(count.total).toBe(n)
    // Node A answers the same status.
    expect((await call(direct[0], location)).status).toBe(200)
  })

  test('stopping one API node (SIGTERM) under load loses no accepted write', async () => {
    const system = `urn:${RUN}:d`
    const attempts: { value: string; status: number; id?: string }[] = []
    let stopped = false
    let seq = 0
    const loop = async () => {
      while (!stopped) {
        const value = `d-${seq++}`
        const res = await call(lb, '/Patient', { method: 'POST', json: patient(system, value, `Load${RUN}`) })
        const body: any = await res.json().catch(() => undefined)
        attempts.push({ value, status: res.status, id: res.status === 201 ? body?.id : undefined })
      }
    }
    const loops = Array.from({ length: 8 }, loop)
    await Bun.sleep(700)
    const before = attempts.length
    const code = await stop(nodeB, 'SIGTERM')
    expect(code).toBe(0) // a clean shutdown, not a kill
    await Bun.sleep(1000) // node A alone takes the load
    stopped = true
    await Promise.all(loops)

    const created = attempts.filter((a) => a.status === 201)
    const failed = attempts.filter((a) => a.status !== 201)
    console.log(
      `  creates through nginx: ${attempts.length} (${before} before the stop), 201: ${created.length}, failed: ${failed.length} ${JSON.stringify([...new Set(failed.map((f) => f.status))])}`,
    )
    expect(created.length).toBeGreaterThan(before) // writes went on after node B left
    for (const f of failed) expect(f.status).toBe(502)

    const stored = await patientsBySystem(system)
    // Every accepted create is there once, under the id it was given; a failed one is there once or not at all.
    for (const a of created) expect(stored.get(a.value)).toEqual([a.id as string])
    for (const f of failed) expect((stored.get(f.value) ?? []).length).toBeLessThanOrEqual(1)
    expect([...stored.values()].every((v) => v.length === 1)).toBe(true)
    // ...and readable in full.
    await inChunks(created, 16, async (a) => {
      const p = await getJson(lb, `/Patient/${a.id}`)
      expect(p.identifier[0].value).toBe(a.value)
      expect(p.meta.versionId).toBe('1')
    })
    for (const f of failed) {
      const id = stored.get(f.value)?.[0]
      if (!id) continue
      const p = await getJson(lb, `/Patient/${id}`)
      expect(p.name[0].given).toEqual([f.value])
      expect(p.meta.versionId).toBe('1')
    }
  }, 30_000)

  test('a worker killed mid-job (SIGKILL): the next worker does not run it blindly again; it fails with its reason, nothing written', async () => {
    const system = `urn:${RUN}:e`
    const n = Number(process.env.CLUSTER_KILL_BUNDLE ?? 6000)
    const entry = [...Array(n).keys()].map((i) => ({ resource: patient(system, `e-${i}`, `Kill${RUN}`), request: { method: 'POST', url: 'Patient' } }))
    const res = await call(direct[0], '', {
      method: 'POST',
      json: { resourceType: 'Bundle', type: 'transaction', entry },
      headers: { prefer: 'respond-async' },
    })
    expect(res.status).toBe(202)
    // Watched through nginx (node B is gone by now: the balancer sends everything to node A).
    const status = onOrigin(res.headers.get('content-location') as string, lb)

    // Wait until the worker has taken the job (progress "0 of n entries"), then kill it.
    let progress = ''
    for (const until = Date.now() + 15_000; Date.now() < until && !/^\d+ of \d+ entries$/.test(progress); await Bun.sleep(5)) {
      const s = await call(lb, status)
      await s.body?.cancel()
      expect(s.status).toBe(202)
      progress = s.headers.get('x-progress') ?? ''
    }
    expect(progress).toBe(`0 of ${n} entries`)
    await stop(worker, 'SIGKILL')
    const afterKill = await call(lb, status)
    await afterKill.body?.cancel()
    expect(afterKill.status).toBe(202) // not finished by the killed worker

    // A new worker. BullMQ hands a stalled job over once its lock has expired (JOB_LOCK_MS) and a stalled
    // check has seen it twice; checks run every JOB_STALLED_CHECK_MS, throttled across workers by a Redis
    // key: about 10 s with FAST_TAKEOVER (30-62 s with BullMQ's defaults).
    const t0 = Date.now()
    const second = startWorker('worker-2')
    await waitFor(second, 'workers started', logged(second, 'workers started'))
    let done: any
    let doneStatus = 0
    for (const until = Date.now() + 60_000; Date.now() < until; await Bun.sleep(100)) {
      const s = await call(lb, status)
      if (s.status === 202) {
        await s.body?.cancel()
        continue
      }
      doneStatus = s.status
      done = await s.json()
      break
    }
    console.log(`  killed worker's job answered by the second worker after ${((Date.now() - t0) / 1000).toFixed(1)} s`)
    // The Bundle may be what killed its worker (issue 19): the job fails with a reason the submitter
    // reads, and since the transaction never committed, nothing of it is stored.
    expect(doneStatus).toBe(500)
    expect(done?.resourceType).toBe('OperationOutcome')
    expect(done.issue[0].diagnostics).toContain('stopped before finishing')
    expect((await patientsBySystem(system)).size).toBe(0)
  }, 90_000)
})
