// $export benchmark: Synthea x{copies} loaded straight through the repository (bench/load-synthea.ts) into
// a fresh database, then a system-level export run by a worker process through the API node (the cluster
// form), with the files in PostgreSQL and then in a folder (BULK_STORAGE_DIR). Prints resources/s from
// the kick-off to the manifest and from the job's start to its end (what the queue's pickup adds is the
// difference; the job reads while transactionTime settles, export-settle.ts), the CPU per resource, and
// the download of every file.
// Usage: bun run bench/bulk-export.ts [copies=10]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'
import { prepareFhirDefinitions } from '../shared/fhir/prepare'
import { ensureSynthea } from './load-synthea'
import { BENCH_KEY, bulkManifest, cpuMeter, databaseCpuMeter, rssPeak, startBenchServer, startBenchWorker } from './server'

const copies = Number(process.argv[2] ?? 10)
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const headers = { authorization: `Bearer ${BENCH_KEY}`, prefer: 'respond-async' }
const dir = mkdtempSync(join(tmpdir(), 'bench-bulk-export-'))

/** Runs an export to its manifest; returns it with the status URL and the duration. */
async function exportOnce(base: string, query = ''): Promise<{ manifest: any; status: string; seconds: number }> {
  const t0 = performance.now()
  const res = await fetch(`${base}/fhir/$export${query}`, { headers })
  if (res.status !== 202) throw new Error(`kick-off: ${res.status} ${await res.text()}`)
  const status = res.headers.get('content-location') as string
  return { ...(await bulkManifest(status, headers, t0)), status }
}

prepareFhirDefinitions()
const queuePrefix = `bench_bulk_export_${Date.now().toString(36)}`
// Free ports (other benchmarks on the machine take fixed ones).
const freePort = (): number => {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port as number
  probe.stop(true)
  return port
}
const first = await startBenchServer(freePort(), { QUEUE_PREFIX: queuePrefix })
const servers = [first]
const sql = createSql(first.databaseUrl, { max: 4 })
try {
  await migrate(sql)
  await ensureSynthea(sql, first.databaseUrl, copies)
  for (const storage of ['PostgreSQL', 'folder'] as const) {
    let server = first
    if (storage === 'folder') {
      // A second API node on the same database (kept when it stops), its files in a folder, as its worker's.
      process.env.BENCH_DB = new URL(first.databaseUrl).pathname.slice(1)
      process.env.BULK_STORAGE_DIR = dir
      server = await startBenchServer(freePort(), { QUEUE_PREFIX: `${queuePrefix}_dir` })
      servers.unshift(server)
      delete process.env.BENCH_DB
    }
    const worker = await startBenchWorker(server, storage === 'folder' ? `${queuePrefix}_dir` : queuePrefix)
    try {
      await exportOnce(server.base, '?_type=Basic') // the worker has started and taken a job: its idle memory is its own
      const memory = rssPeak(worker.pid)
      const cpu = cpuMeter({ API: server.pid, worker: worker.pid })
      const db = await databaseCpuMeter(server.databaseUrl)
      const { manifest, status, seconds } = await exportOnce(server.base)
      const peak = memory.stop()
      const idle = memory.idle
      const n = manifest.output.reduce((a: number, o: any) => a + o.count, 0)
      const id = new URL(status).searchParams.get('_jobId')
      const [job] = await sql<{ scan: number }[]>`
        select extract(epoch from finished_at - started_at)::float8 as scan
        from admin_job where id = ${id}`
      console.log(
        `export to ${storage}: ${fmt(n / seconds)} resources/s from kick-off to manifest (${fmt(n)} resources, ${manifest.output.length} files, ${seconds.toFixed(2)} s); ` +
          `${fmt(n / job.scan)} resources/s from the job's start to its end (${job.scan.toFixed(2)} s); ${cpu.perUnit(n)}` +
          `\n  this database's PostgreSQL backends ${await db.perUnit(n)} µs each; worker RSS: idle ${idle} MB, peak ${peak} MB, growth ${peak - idle} MB`,
      )
      await db.close()
      const d0 = performance.now()
      let lines = 0
      let bytes = 0
      for (const o of manifest.output) {
        const text = await (await fetch(o.url, { headers })).text()
        bytes += text.length
        lines += text.split('\n').length - 1
      }
      const ds = (performance.now() - d0) / 1000
      if (lines !== n) throw new Error(`the files hold ${lines} lines, the manifest counts ${n}`)
      console.log(`  download of every file: ${fmt(lines / ds)} resources/s, ${(bytes / 1048576 / ds).toFixed(0)} MB/s (${(bytes / 1048576).toFixed(0)} MB)`)
    } finally {
      await worker.stop()
    }
  }
} finally {
  await sql.end()
  for (const s of servers) await s.stop() // the first one started drops the database
  rmSync(dir, { recursive: true, force: true })
}
