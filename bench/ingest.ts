// Ingest benchmark: Synthea transaction Bundles POSTed to an API node by 2 concurrent clients, processed
// by a separate worker process (the cluster form), on a fresh database with full indexing. Prints
// resources/s, bundles, elapsed and the peak RSS of both processes; then the same for synthea-conditional
// (batch Bundles first) on another fresh database, and the memory one ~5 MB Bundle takes on its own.
// Usage: bun run bench/ingest.ts [concurrency] [--smart-only] [--warm] [--runs N]
//   --smart-only: synthea-smart alone. --warm: the same Bundles are loaded once before the timed load (a
//   second copy: they are all plain POSTs), so that the processes' JIT has compiled the write path, as
//   in a server that has been running; without it the figure includes a fresh worker's warm-up.
//   --runs N: synthea-smart N times, each on new processes and a new database, then the median and the
//   range (the 2-core VM's speed moves by 20% within minutes: one run says little).
import { RedisClient } from 'bun'
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BundleFile, importBundles, listBundles, type ImportReport, stderrProgress } from '../bin/import'
import { dataPath, largestSyntheaBundles } from '../tests/data'
import { BENCH_KEY, cpuMeter, startBenchServer, startBenchWorker } from './server'

const smartOnly = process.argv.includes('--smart-only')
const warm = process.argv.includes('--warm')
const runsAt = process.argv.indexOf('--runs')
const runs = runsAt > 0 ? Number(process.argv[runsAt + 1]) : 1
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs takes a positive whole number')
const concurrency = Number(process.argv.slice(2).find((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--runs') ?? 2)

interface Peaks {
  api: number
  worker: number
}

/** Peak resident memory (MB) of a process: VmHWM, the kernel's high-water mark of VmRSS. */
function peakMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024)
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024)
}

async function ingest(
  paths: string[],
  port: number,
  clients = concurrency,
): Promise<{ report: ImportReport; idle: Peaks; idlePeak: Peaks; peak: Peaks; largestMb: number; cpu: string }> {
  const queuePrefix = `bench_ingest_${Date.now().toString(36)}`
  const server = await startBenchServer(port, { QUEUE_PREFIX: queuePrefix })
  // The worker: its own process on the same database and queues, as `bun run worker` runs it.
  const worker = await startBenchWorker(server, queuePrefix)
  try {
    const bundles: BundleFile[] = listBundles(paths)
    if (warm) await importBundles(bundles, { url: `${server.base}/fhir`, key: BENCH_KEY, concurrency: clients })
    const idle = { api: rssMb(server.pid), worker: rssMb(worker.pid) }
    const idlePeak = { api: peakMb(server.pid), worker: peakMb(worker.pid) } // start-up's own high-water mark
    // VmHWM keeps start-up's peak (definitions loading), so the ingest's own peak is sampled from VmRSS.
    const peak = { ...idle }
    const sampler = setInterval(() => {
      peak.api = Math.max(peak.api, rssMb(server.pid))
      peak.worker = Math.max(peak.worker, rssMb(worker.pid))
    }, 20)
    const cpu = cpuMeter({ API: server.pid, worker: worker.pid })
    const report = await importBundles(bundles, { url: `${server.base}/fhir`, key: BENCH_KEY, concurrency: clients, onProgress: stderrProgress() })
    clearInterval(sampler)
    const hwm = { api: peakMb(server.pid), worker: peakMb(worker.pid) }
    if (hwm.api > idlePeak.api) peak.api = Math.max(peak.api, hwm.api) // a peak between two samples
    if (hwm.worker > idlePeak.worker) peak.worker = Math.max(peak.worker, hwm.worker)
    for (const f of report.failures.slice(0, 10))
      console.error(`FAILED ${f.file}${f.entry === undefined ? '' : ` entry ${f.entry}`}: ${f.status} ${f.diagnostics.join(' | ')}`)
    return { report, idle, idlePeak, peak, largestMb: Math.max(...bundles.map((b) => b.bytes)) / 1024 / 1024, cpu: cpu.perUnit(report.resources) }
  } finally {
    await worker.stop()
    await server.stop()
    await dropQueueKeys(queuePrefix)
  }
}

/** The run's queues, jobs and Bundle texts, removed from Redis (completed jobs are kept an hour). */
async function dropQueueKeys(prefix: string): Promise<void> {
  const redis = new RedisClient(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
  try {
    let cursor = '0'
    do {
      const [next, keys] = (await redis.send('SCAN', [cursor, 'MATCH', `${prefix}:*`, 'COUNT', '1000'])) as [string, string[]]
      if (keys.length > 0) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
  } finally {
    redis.close()
  }
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

const smartRates: number[] = []
for (const [folder, port] of [...Array.from({ length: runs }, () => ['synthea-smart', 18081] as const), ['synthea-conditional', 18082] as const]) {
  if (smartOnly && folder !== 'synthea-smart') continue
  const { report, idle, idlePeak, peak, largestMb, cpu } = await ingest([dataPath(folder)], port)
  if (folder === 'synthea-smart') smartRates.push(report.resources / report.seconds)
  const phases = report.phases
    .map((p) => `${p.label} ${p.bundles} bundles ${fmt(p.resources)} resources ${p.seconds.toFixed(1)} s (${fmt(p.resources / p.seconds)}/s)`)
    .join('; ')
  console.log(
    `${folder}${warm ? ' (warm)' : ''}: ${fmt(report.resources / report.seconds)} resources/s, ${report.ok}/${report.total} bundles, ${fmt(report.resources)} resources in ${report.seconds.toFixed(1)} s, ${report.errors} errors, ${concurrency} clients; ${cpu.replace('each', 'per resource')}` +
      `\n  ${phases}` +
      `\n  peak RSS while ingesting: API ${peak.api} MB, worker ${peak.worker} MB (idle before: API ${idle.api} MB, worker ${idle.worker} MB; start-up VmHWM API ${idlePeak.api} MB, worker ${idlePeak.worker} MB; largest bundle ${largestMb.toFixed(1)} MB)`,
  )
}

if (runs > 1) {
  const sorted = [...smartRates].sort((a, b) => a - b)
  const mid = sorted.length / 2
  const median = sorted.length % 2 ? sorted[Math.floor(mid)] : (sorted[mid - 1] + sorted[mid]) / 2
  console.log(
    `synthea-smart${warm ? ' (warm)' : ''} over ${runs} runs: median ${fmt(median)} resources/s (${fmt(sorted[0])}-${fmt(sorted[sorted.length - 1])})`,
  )
}

if (smartOnly) process.exit(0)

// One ~5 MB transaction alone (the two largest synthea-smart Bundles as one, placeholders kept unique):
// how much memory above idle each process takes for it.
const big = join(tmpdir(), `bench-ingest-${process.pid}.json`)
writeFileSync(big, JSON.stringify(largestSyntheaBundles(2), null, 4)) // indented as the Synthea files are
try {
  const { report, idle, peak, largestMb } = await ingest([big], 18083, 1)
  const growth = (p: number, i: number) => `${p - i} MB (${((p - i) / largestMb).toFixed(1)}x its size)`
  console.log(
    `one ${largestMb.toFixed(1)} MB transaction (${fmt(report.resources)} entries, ${report.errors} errors) in ${report.seconds.toFixed(1)} s: peak RSS above idle: API ${growth(peak.api, idle.api)}, worker ${growth(peak.worker, idle.worker)}`,
  )
} finally {
  unlinkSync(big)
}
