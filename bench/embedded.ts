// Embedded-form benchmark: `bun run bin/start.ts` with no DATABASE_URL and no REDIS_URL (PGlite in a
// fresh DATA_DIR). Start to first answered request (first start, then a restart on the same folder) and
// the read rate of GET /fhir/Patient/{id} at 32 connections (wrk).
// Usage: bun run bench/embedded.ts [seconds]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_KEY, SERVER_ENV, wrk } from './server'
import { pathsScript, seedPatients } from './workload'

const seconds = Number(process.argv[2] ?? 10)
const port = 18280
const base = `http://127.0.0.1:${port}`
const dir = mkdtempSync(join(tmpdir(), 'fhir-bench-embedded-'))

/** Starts bin/start.ts; resolves with the process and ms from spawn to the first answered request. */
async function start(): Promise<{ proc: ReturnType<typeof Bun.spawn>; ms: number; phases: string }> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    ...SERVER_ENV,
    DATA_DIR: join(dir, 'pglite'),
    PORT: String(port),
    ADMIN_API_KEY: BENCH_KEY,
    LOG_LEVEL: 'info',
  }
  delete env.DATABASE_URL
  delete env.REDIS_URL
  const t0 = Date.now()
  const proc = Bun.spawn([process.execPath, 'run', 'bin/start.ts'], { cwd: join(import.meta.dir, '..'), env, stdout: 'ignore', stderr: 'pipe' })
  const log: string[] = []
  void (async () => {
    for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) log.push(new TextDecoder().decode(chunk))
  })()
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`bin/start.ts exited (${proc.exitCode}): ${log.join('')}`)
    if (
      await fetch(`${base}/fhir/metadata`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break
    await Bun.sleep(10)
  }
  const ms = Date.now() - t0
  // When each start-up step ended, from the structured log lines.
  const phases = log
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { t: string; msg: string })
    .map((l) => `${l.msg} +${Date.parse(l.t) - t0} ms`)
    .join(', ')
  return { proc, ms, phases }
}

async function stop(proc: ReturnType<typeof Bun.spawn>): Promise<void> {
  proc.kill('SIGTERM')
  await proc.exited
}

try {
  const first = await start()
  console.log(`embedded first start (fresh DATA_DIR) to first answered request: ${first.ms} ms (${first.phases})`)
  const ids = await seedPatients(base)
  await stop(first.proc)

  const again = await start()
  console.log(`embedded restart (existing DATA_DIR) to first answered request: ${again.ms} ms`)
  try {
    const script = pathsScript(
      join(dir, 'read.lua'),
      ids.map((id) => `/fhir/Patient/${id}`),
    )
    await wrk(`${base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds: 3, script }) // warm-up
    const r = await wrk(`${base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds, script })
    console.log(
      `embedded read Patient/{id}: ${Math.round(r.rps)} req/s at 32 connections, p50 ${r.p50} ms, p90 ${r.p90} ms, p99 ${r.p99} ms, errors ${r.errors} (${ids.length} Synthea patients, PGlite, one connection)`,
    )
  } finally {
    await stop(again.proc)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
