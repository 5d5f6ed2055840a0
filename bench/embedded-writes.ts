// Embedded-form write cost, EMBEDDED_FSYNC on against off, in alternating pairs on one DATA_DIR (a restart
// each, the same data): creates/s of POST /fhir/Patient by one client (each create its own commit, one
// fsync each) and by 16 at once (group commit: one statement and one fsync for the creates that arrive
// together), with the server's CPU per create (utime + stime of the process, /proc). PGlite is one
// thread: an fsync holds the whole process for the disk's flush time, which is wall time, not CPU.
// Usage: bun run bench/embedded-writes.ts [seconds per run] [pairs]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_KEY, SERVER_ENV } from './server'

const seconds = Number(process.argv[2] ?? 10)
const pairs = Number(process.argv[3] ?? 2)
const port = 18281
const base = `http://127.0.0.1:${port}`
const dir = mkdtempSync(join(tmpdir(), 'fhir-bench-embedded-writes-'))
const TICK_US = 1e6 / 100 // USER_HZ

async function start(fsync: boolean): Promise<ReturnType<typeof Bun.spawn>> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    ...SERVER_ENV,
    DATA_DIR: join(dir, 'pglite'),
    PORT: String(port),
    ADMIN_API_KEY: BENCH_KEY,
    EMBEDDED_FSYNC: String(fsync),
    LOG_LEVEL: 'warn',
  }
  delete env.DATABASE_URL
  delete env.REDIS_URL
  const proc = Bun.spawn([process.execPath, 'run', 'bin/start.ts'], { cwd: join(import.meta.dir, '..'), env, stdout: 'ignore', stderr: 'ignore' })
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`bin/start.ts exited (${proc.exitCode})`)
    if (
      await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return proc
    await Bun.sleep(50)
  }
}

/** utime + stime of a process, µs. */
function cpuUs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) * TICK_US
}

async function creates(clients: number, ms: number): Promise<number> {
  let n = 0
  const until = Date.now() + ms
  const body = JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Bench', given: ['Write'] }], gender: 'female', birthDate: '1970-01-01' })
  const headers = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json' }
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < until) {
        const res = await fetch(`${base}/fhir/Patient`, { method: 'POST', headers, body })
        await res.arrayBuffer()
        if (res.status === 201) n++
      }
    }),
  )
  return n
}

try {
  for (let pair = 0; pair < pairs; pair++)
    for (const fsync of [true, false]) {
      const proc = await start(fsync)
      try {
        await creates(4, 2000) // warm-up
        for (const clients of [1, 16]) {
          const cpu0 = cpuUs(proc.pid)
          const n = await creates(clients, seconds * 1000)
          const cpu = cpuUs(proc.pid) - cpu0
          console.log(
            `EMBEDDED_FSYNC=${fsync} clients=${clients}: ${Math.round(n / seconds)} creates/s, server CPU ${Math.round(cpu / Math.max(1, n))} µs per create (${n} in ${seconds} s)`,
          )
        }
      } finally {
        proc.kill('SIGTERM')
        await proc.exited
      }
    }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
