// Resident memory (RSS) of the three kinds of process, as package.json starts them: the embedded start
// (`bun run start`, PGlite, jobs in process), an API node (`bun run api`) and a worker (`bun run worker`) on
// PostgreSQL and Redis. Idle after start, the peak under a load (creates, transactions, searches, reads
// over HTTP for some seconds), and idle again after it.
// Usage: [MIMALLOC_PURGE_DELAY=ms] bun run bench/memory.ts [embedded|cluster|all] [load seconds]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSql } from '../shared/db/client'

const ROOT = join(import.meta.dir, '..')
const which = process.argv[2] ?? 'all'
const seconds = Number(process.argv[3] ?? 20)
const KEY = 'bench-memory-admin-key-0123456789abcdef'
const PG = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const ENC = '7a'.repeat(32)

/** The command of a package.json script, its leading VAR=value words as environment. */
function script(name: string): { env: Record<string, string>; cmd: string[] } {
  const words = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts[name] as string).split(/\s+/)
  const env: Record<string, string> = {}
  while (/^[A-Za-z_]+=/.test(words[0])) {
    const [k, v] = (words.shift() as string).split('=')
    env[k] = v
  }
  return { env, cmd: words }
}

const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Math.round(Number(m[1]) / 1024) : Number.NaN
}

function spawn(name: string, env: Record<string, string>) {
  const s = script(name)
  // MIMALLOC_PURGE_DELAY set for this command overrides the script's, to compare allocator settings.
  const purge = process.env.MIMALLOC_PURGE_DELAY ? { MIMALLOC_PURGE_DELAY: process.env.MIMALLOC_PURGE_DELAY } : {}
  return Bun.spawn(s.cmd, { cwd: ROOT, env: { ...process.env, ...s.env, ...purge, LOG_LEVEL: 'warn', ...env }, stdout: 'ignore', stderr: 'inherit' })
}

async function waitHealthy(base: string) {
  for (let i = 0; i < 1200; i++) {
    if (
      await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return
    await Bun.sleep(50)
  }
  throw new Error(`${base} did not answer`)
}

/** Clients writing and reading for `seconds`; the RSS peak of `pids` meanwhile. */
async function load(base: string, pids: number[]): Promise<number[]> {
  const peak = pids.map(rssMb)
  const sampler = setInterval(() => pids.forEach((p, i) => (peak[i] = Math.max(peak[i], rssMb(p)))), 250)
  const h = { authorization: `Bearer ${KEY}`, 'content-type': 'application/fhir+json' }
  const until = Date.now() + seconds * 1000
  const ids: string[] = []
  let n = 0
  const client = async () => {
    while (Date.now() < until) {
      const i = n++
      const kind = i % 10
      if (kind < 4) {
        const r = await fetch(`${base}/fhir/Patient`, {
          method: 'POST',
          headers: h,
          body: JSON.stringify({
            resourceType: 'Patient',
            name: [{ family: `Mem${i % 97}`, given: ['A'] }],
            gender: i % 2 ? 'male' : 'female',
            birthDate: '1970-01-01',
          }),
        })
        if (r.status === 201) ids.push(((await r.json()) as any).id)
      } else if (kind < 6) {
        const entry = [...Array(20).keys()].map((k) => ({
          resource: {
            resourceType: 'Observation',
            status: 'final',
            code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
            valueQuantity: { value: k, unit: 'cm' },
          },
          request: { method: 'POST', url: 'Observation' },
        }))
        await (
          await fetch(`${base}/fhir`, { method: 'POST', headers: h, body: JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }) })
        ).arrayBuffer()
      } else if (kind < 8) await (await fetch(`${base}/fhir/Patient?family=Mem${i % 97}&_count=50`, { headers: h })).arrayBuffer()
      else if (ids.length) await (await fetch(`${base}/fhir/Patient/${ids[i % ids.length]}`, { headers: h })).arrayBuffer()
    }
  }
  await Promise.all([...Array(8)].map(client))
  clearInterval(sampler)
  pids.forEach((p, i) => (peak[i] = Math.max(peak[i], rssMb(p))))
  return peak
}

async function measure(label: string, base: string, procs: { name: string; pid: number }[]) {
  await waitHealthy(base)
  await Bun.sleep(5000)
  const idle = procs.map((p) => rssMb(p.pid))
  const peak = await load(
    base,
    procs.map((p) => p.pid),
  )
  await Bun.sleep(10_000)
  const after = procs.map((p) => rssMb(p.pid))
  procs.forEach((p, i) => console.log(`${label} ${p.name}: idle ${idle[i]} MB, peak under ${seconds} s of load ${peak[i]} MB, idle after ${after[i]} MB`))
}

if (which === 'embedded' || which === 'all') {
  const dir = mkdtempSync(join(tmpdir(), 'fhir-bench-memory-'))
  const port = 18291
  const p = spawn('start', { DATA_DIR: join(dir, 'pglite'), PORT: String(port), HOST: '127.0.0.1', ADMIN_API_KEY: KEY, DATABASE_URL: '', REDIS_URL: '' })
  try {
    await measure('embedded (bun run start)', `http://127.0.0.1:${port}`, [{ name: 'process', pid: p.pid }])
  } finally {
    p.kill('SIGTERM')
    await p.exited
    rmSync(dir, { recursive: true, force: true })
  }
}

if (which === 'cluster' || which === 'all') {
  const db = `bench_memory_${Date.now().toString(36)}`
  const u = new URL(PG)
  u.pathname = `/${db}`
  const port = 18292
  const env = {
    DATABASE_URL: u.toString(),
    REDIS_URL: REDIS,
    QUEUE_PREFIX: db,
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_API_KEY: KEY,
    TOKEN_ENCRYPTION_KEY: ENC,
  }
  const api = spawn('api', env)
  const worker = spawn('worker', env)
  try {
    await measure('cluster form', `http://127.0.0.1:${port}`, [
      { name: 'API node (bun run api)', pid: api.pid },
      { name: 'worker (bun run worker)', pid: worker.pid },
    ])
  } finally {
    for (const p of [api, worker]) p.kill('SIGTERM')
    await Promise.all([api.exited, worker.exited])
    const admin = createSql(PG, { max: 1 })
    await admin`drop database if exists ${admin(db)} with (force)`
    await admin.end()
  }
}
