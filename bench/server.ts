// Starts an API node as its own process on a fresh benchmark database, like production would run it.
import { readdirSync, readFileSync } from 'node:fs'
import { createSql } from '../shared/db/client'

export const BENCH_KEY = 'bench-admin-key-0123456789abcdef'

/**
 * The environment package.json's `start`, `api` and `worker` scripts give a server process: mimalloc
 * (Bun's allocator) returns freed memory to the system after a second rather than 100 ms (the write path
 * spent half of its CPU in page faults at 100 ms) or never (-1: a process kept its start-up peak, 900 MB
 * for the embedded start); README, "Processes", Memory. MIMALLOC_PURGE_DELAY set by the caller wins.
 */
export const SERVER_ENV = { MIMALLOC_PURGE_DELAY: process.env.MIMALLOC_PURGE_DELAY ?? '1000' }

/**
 * What the `worker` script adds: JavaScriptCore's fourth tier (FTL) off. A worker's transaction path
 * costs the same CPU per resource with it or without once warm, and a fresh worker spends about a
 * quarter less without it, the FTL compiler's work (README, "Processes"). Set by the caller, it wins.
 */
export const WORKER_ENV = { ...SERVER_ENV, BUN_JSC_useFTLJIT: process.env.BUN_JSC_useFTLJIT ?? 'false' }

export interface BenchServer {
  base: string
  databaseUrl: string
  pid: number
  rssMb(): number
  stop(): Promise<void>
}

/** The cluster form needs TOKEN_ENCRYPTION_KEY; every process of a bench run shares this one. */
export const BENCH_ENCRYPTION_KEY = process.env.TOKEN_ENCRYPTION_KEY ?? 'be'.repeat(32)

/** BENCH_PORT_OFFSET moves every bench's API ports, so that two checkouts can run the same bench at once. */
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 0)

export async function startBenchServer(requestedPort = 18080, env: Record<string, string> = {}): Promise<BenchServer> {
  const port = requestedPort + PORT_OFFSET
  // BENCH_DB names a database to reuse and keep (to look at a loaded data set between runs); otherwise a
  // fresh one, named BENCH_DB_PREFIX (default bench) and the time, dropped on stop.
  const keep = process.env.BENCH_DB
  const db = keep ?? `${process.env.BENCH_DB_PREFIX ?? 'bench'}_${Date.now().toString(36)}`
  const pg = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432'
  // BENCH_TREE runs the API node (and workers) of another checkout (a worktree of an older commit) for
  // an A/B, with the same SERVER_ENV.
  const proc = Bun.spawn(['bun', ...profileArgs('api'), 'run', 'api/main.ts'], {
    cwd: process.env.BENCH_TREE ?? `${import.meta.dir}/..`,
    env: {
      ...process.env,
      ...SERVER_ENV,
      DATABASE_URL: `${pg}/${db}`,
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: db,
      PORT: String(port),
      ADMIN_API_KEY: BENCH_KEY,
      TOKEN_ENCRYPTION_KEY: BENCH_ENCRYPTION_KEY,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; i < 600; i++) {
    // Up to a minute: a fresh database's migrations took 15 s on the loaded machine.
    try {
      if ((await fetch(`${base}/healthz`)).ok) break
    } catch {}
    await Bun.sleep(100)
  }
  return {
    base,
    databaseUrl: `${pg}/${db}`,
    pid: proc.pid,
    rssMb() {
      const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8')
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
      return Math.round(kb / 1024)
    },
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
      if (keep) return
      const admin = createSql(`${pg}/postgres`, { max: 1 })
      await admin`drop database if exists ${admin(db)} with (force)`
      await admin.end()
    },
  }
}

/** BENCH_PROFILE=<dir>: the process writes its CPU profile (markdown) to <dir>/<role> when it stops. */
export function profileArgs(role: string): string[] {
  const dir = process.env.BENCH_PROFILE
  return dir ? [process.env.BENCH_PROFILE_JSON ? '--cpu-prof' : '--cpu-prof-md', `--cpu-prof-dir=${dir}/${role}`] : []
}

/** Runs wrk and returns requests/s and latency percentiles (ms). */
export async function wrk(
  url: string,
  opts: { connections: number; seconds: number; threads?: number; script?: string },
): Promise<{ rps: number; p50: number; p90: number; p99: number; errors: number; raw: string }> {
  const args = [
    'wrk',
    `-t${opts.threads ?? Math.min(2, opts.connections)}`,
    `-c${opts.connections}`,
    `-d${opts.seconds}s`,
    '--latency',
    '-H',
    `Authorization: Bearer ${BENCH_KEY}`,
  ]
  if (opts.script) args.push('-s', opts.script)
  args.push(url)
  const p = Bun.spawn(args, { stdout: 'pipe', stderr: 'inherit' })
  const raw = await new Response(p.stdout).text()
  await p.exited
  const ms = (label: string) => {
    const m = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(raw)
    if (!m) return Number.NaN
    const v = Number(m[1])
    return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v
  }
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(raw)?.[1] ?? 0)
  const sockErr = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(raw)
  const errors = non2xx + (sockErr ? sockErr.slice(1).reduce((a, b) => a + Number(b), 0) : 0)
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(raw)?.[1] ?? 0), p50: ms('50'), p90: ms('90'), p99: ms('99'), errors, raw }
}

/** A worker process on the bench server's database and queues, as `bun run worker` runs it. */
export async function startBenchWorker(
  server: BenchServer,
  queuePrefix = server.databaseUrl.split('/').pop() as string,
): Promise<{ pid: number; stop(): Promise<void> }> {
  const proc = Bun.spawn(['bun', ...profileArgs('worker'), 'run', 'workers/main.ts'], {
    cwd: process.env.BENCH_TREE ?? `${import.meta.dir}/..`,
    env: {
      ...process.env,
      ...WORKER_ENV,
      DATABASE_URL: server.databaseUrl,
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: queuePrefix,
      TOKEN_ENCRYPTION_KEY: BENCH_ENCRYPTION_KEY,
      LOG_LEVEL: 'warn',
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  await Bun.sleep(1500) // it connects and registers its queues
  return {
    pid: proc.pid,
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

/** CPU seconds used so far by process `pid` (user + system), from /proc (in clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0 // the process ended
  }
}

/** CPU seconds used so far by every process whose name is `name` (PostgreSQL's server processes, Redis). */
export function cpuSecondsOf(name: string): number {
  let total = 0
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      if (stat.includes(`(${name})`)) total += cpuSeconds(Number(d))
    } catch {}
  }
  return total
}

/** CPU seconds all cores spent busy so far (not idle nor waiting for I/O), from /proc/stat. */
function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number)
  const [user, nice, system, , , irq, softirq, steal] = ticks
  return (user + nice + system + irq + softirq + steal) / 100
}

/**
 * Starts counting CPU time of the given processes and of PostgreSQL and Redis; `perUnit(n)` then says how many
 * microseconds each used per unit of work (request, resource) since the start.
 */
export function cpuMeter(pids: Record<string, number>): { perUnit(units: number): string } {
  const start = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]))
  const pg0 = cpuSecondsOf('postgres')
  const redis0 = cpuSecondsOf('redis-server')
  const machine0 = machineBusySeconds()
  return {
    perUnit(units) {
      const parts = Object.entries(pids).map(([name, pid]) => `${name} ${Math.round(((cpuSeconds(pid) - start[name]) * 1e6) / units)}`)
      parts.push(`PostgreSQL ${Math.round(((cpuSecondsOf('postgres') - pg0) * 1e6) / units)}`)
      parts.push(`Redis ${Math.round(((cpuSecondsOf('redis-server') - redis0) * 1e6) / units)}`)
      // Everything the cores did (the load generator, the kernel's loopback networking, other daemons too).
      parts.push(`whole machine ${Math.round(((machineBusySeconds() - machine0) * 1e6) / units)}`)
      return `CPU µs each: ${parts.join(', ')}`
    },
  }
}

/**
 * CPU of the PostgreSQL backends serving one database (the processes' pools, not other databases' work):
 * on a machine that others load too, the database's share of a run. Backends that end during the run
 * are not counted (pools keep theirs); the WAL writer and checkpointer are shared and not counted either.
 */
export async function databaseCpuMeter(databaseUrl: string): Promise<{ perUnit(units: number): Promise<number>; close(): Promise<void> }> {
  const name = new URL(databaseUrl).pathname.slice(1)
  const sql = createSql(databaseUrl.replace(/\/[^/]*$/, '/postgres'), { max: 1 })
  const pids = async () => (await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${name}`).map((r) => r.pid)
  const start = new Map((await pids()).map((p) => [p, cpuSeconds(p)]))
  return {
    async perUnit(units) {
      let total = 0
      for (const p of await pids()) total += cpuSeconds(p) - (start.get(p) ?? 0)
      return Math.round((total * 1e6) / units)
    },
    close: () => sql.end(),
  }
}

/** Resident memory (MB) of a process now, from /proc. */
export function rssMb(pid: number): number {
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024)
}

/** Samples a process's resident memory every 20 ms from now: its idle figure, and the peak when stopped. */
export function rssPeak(pid: number): { idle: number; stop(): number } {
  const idle = rssMb(pid)
  let peak = idle
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid))
  }, 20)
  return {
    idle,
    stop() {
      clearInterval(sampler)
      return Math.max(peak, rssMb(pid))
    },
  }
}

/** Polls a Bulk Data status URL until it answers its manifest; returns it with the seconds since `t0`. */
export async function bulkManifest(statusUrl: string, headers: Record<string, string>, t0: number): Promise<{ manifest: any; seconds: number }> {
  for (;;) {
    const s = await fetch(statusUrl, { headers })
    if (s.status === 200) return { manifest: await s.json(), seconds: (performance.now() - t0) / 1000 }
    if (s.status !== 202) throw new Error(`status: ${s.status} ${await s.text()}`)
    await s.arrayBuffer()
    await Bun.sleep(20)
  }
}
