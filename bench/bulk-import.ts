// $import benchmark: Synthea x{copies} converted to NDJSON (bench/synthea-ndjson.ts, one file per type,
// written to /tmp), served by a local origin in this process, imported by a worker process through the
// API node (the cluster form) into a fresh database with full indexing. Prints resources/s end to end
// (kick-off to completed status), the CPU per resource of each process, and the worker's memory: idle
// before, peak during, and the growth. Then, unless --first-only, the same import again (every resource
// unchanged: no write).
// Usage: bun run bench/bulk-import.ts [copies=10] [--one-file] [--first-only]
//   --one-file: every resource in one NDJSON file (the worker's memory must not follow the file's size).
//   BENCH_NDJSON_DIR: the folder the files are written to (each run rewrites it: two runs at once need two).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BENCH_KEY, bulkManifest, cpuMeter, databaseCpuMeter, rssPeak, startBenchServer, startBenchWorker } from './server'
import { writeSyntheaNdjson } from './synthea-ndjson'

const args = process.argv.slice(2)
const copies = Number(args.find((a) => !a.startsWith('--')) ?? 10)
const oneFile = args.includes('--one-file')
const firstOnly = args.includes('--first-only')
const dir = process.env.BENCH_NDJSON_DIR ?? `/tmp/bench-bulk-import-x${copies}`

const set = await writeSyntheaNdjson(copies, dir)
let inputs = set.files.map((f) => ({ type: f.type, path: `/${f.type}.ndjson` }))
if (oneFile) {
  const all = readdirSync(dir)
    .sort()
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('')
  writeFileSync(join(dir, 'all.ndjson.txt'), all)
  inputs = [{ type: 'Patient', path: '/all.ndjson.txt' }]
}
const origin = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => new Response(Bun.file(join(dir, new URL(req.url).pathname.slice(1)))) })
const originUrl = `http://127.0.0.1:${origin.port}`
const queuePrefix = `bench_bulk_import_${Date.now().toString(36)}`
process.env.BULK_IMPORT_ORIGINS = originUrl // for the API node and the worker
process.env.OUTBOUND_ALLOW = '127.0.0.1' // the outbound client reaches the loopback origin
// A free port (other benchmarks on the machine take fixed ones: bench/search.ts 18091 too).
const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
const port = probe.port
probe.stop(true)
const server = await startBenchServer(port, { QUEUE_PREFIX: queuePrefix })
const worker = await startBenchWorker(server, queuePrefix)
writeFileSync(join(dir, 'warm-up.txt'), `${JSON.stringify({ resourceType: 'Basic', id: 'bench-warm-up', code: { text: 'warm-up' } })}\n`)

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const headers = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json', prefer: 'respond-async' }
const bodyOf = (files: { type: string; path: string }[]) =>
  JSON.stringify({
    resourceType: 'Parameters',
    parameter: [
      { name: 'inputFormat', valueCode: 'application/fhir+ndjson' },
      ...files.map((i) => ({
        name: 'input',
        part: [
          { name: 'type', valueCode: i.type },
          { name: 'url', valueUri: `${originUrl}${i.path}` },
        ],
      })),
    ],
  })

/** Runs an import to its end and returns its manifest and duration. */
async function importOnce(body: string): Promise<{ manifest: any; seconds: number }> {
  const t0 = performance.now()
  const res = await fetch(`${server.base}/fhir/$import`, { method: 'POST', headers, body })
  if (res.status !== 202) throw new Error(`kick-off: ${res.status} ${await res.text()}`)
  return bulkManifest(res.headers.get('content-location') as string, headers, t0)
}

async function run(label: string): Promise<void> {
  const memory = rssPeak(worker.pid)
  const cpu = cpuMeter({ API: server.pid, worker: worker.pid })
  const db = await databaseCpuMeter(server.databaseUrl)
  const { manifest, seconds } = await importOnce(bodyOf(inputs))
  const peak = memory.stop()
  const idle = memory.idle
  const n = manifest.output.reduce((a: number, o: any) => a + o.count, 0)
  const changed = manifest.output.reduce((a: number, o: any) => a + o.created + o.updated, 0)
  const errors = manifest.error.reduce((a: number, e: any) => a + e.count, 0)
  console.log(
    `${label}: ${fmt(n / seconds)} resources/s, ${fmt(n)} resources (${fmt(changed)} written, ${errors} errors) from ${inputs.length} files in ${seconds.toFixed(1)} s; ${cpu.perUnit(n)}` +
      `\n  this database's PostgreSQL backends ${await db.perUnit(n)} µs each; worker RSS: idle ${idle} MB, peak ${peak} MB, growth ${peak - idle} MB`,
  )
  await db.close()
}

try {
  console.log(`${fmt(set.resources)} resources of Synthea x${copies} as NDJSON in ${dir}${oneFile ? ' (one file)' : ''}`)
  // One resource first: the worker has started and taken a job (its idle memory is then its own).
  await importOnce(bodyOf([{ type: 'Basic', path: '/warm-up.txt' }]))
  await run('import into an empty database')
  if (!firstOnly) await run('the same import again (unchanged)')
} finally {
  await worker.stop()
  await server.stop()
  origin.stop(true)
}
