// Worst-case memory of single requests (issue 19): an API node and a worker (separate processes, the
// cluster form) on a database holding Synthea records; for each hostile request, the peak RSS growth of
// both processes (VmHWM, reset before each request, minus VmRSS then), the answer's size and the time.
// Usage: bun run bench/hostile-memory.ts [bundles]   (Synthea transaction Bundles loaded first; default 20)
import { readFileSync, writeFileSync } from 'node:fs'
import { largestSyntheaBundles } from '../tests/data'
import { BENCH_KEY, startBenchServer, startBenchWorker } from './server'

const loaded = Number(process.argv[2] ?? 20)
const headers = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json' }
const mb = (kb: number) => kb / 1024
const field = (pid: number, name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)

const server = await startBenchServer(18090)
const worker = await startBenchWorker(server)
try {
  for (let i = 0; i < loaded; i += 5) {
    const res = await fetch(`${server.base}/fhir`, { method: 'POST', headers, body: JSON.stringify(largestSyntheaBundles(5)) })
    if (res.status !== 200) throw new Error(`load: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  }
  const binary = async (bytes: number) => {
    const res = await fetch(`${server.base}/fhir/Binary`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ resourceType: 'Binary', contentType: 'application/octet-stream', data: 'QUFB'.repeat(bytes / 4) }),
    })
    return ((await res.json()) as { id: string }).id
  }
  const ten = await binary(10 * 1024 * 1024)
  const fortyFive = await binary(45 * 1024 * 1024)
  const batch = (urls: string[]) => JSON.stringify({ resourceType: 'Bundle', type: 'batch', entry: urls.map((url) => ({ request: { method: 'GET', url } })) })
  const cases: [string, () => Promise<Response>][] = [
    [
      'batch: 20,000 x GET Patient?_count=200&_revinclude=*',
      () => fetch(`${server.base}/fhir`, { method: 'POST', headers, body: batch(Array(20_000).fill('Patient?_count=200&_revinclude=*')) }),
    ],
    ['batch: 25 x GET of one 10 MB Binary', () => fetch(`${server.base}/fhir`, { method: 'POST', headers, body: batch(Array(25).fill(`Binary/${ten}`)) })],
    [
      'batch: 25 x GET of one 45 MB Binary',
      () => fetch(`${server.base}/fhir`, { method: 'POST', headers, body: batch(Array(25).fill(`Binary/${fortyFive}`)) }),
    ],
    [
      'transaction: 2,000 x GET Observation?_count=200&_include=*',
      () =>
        fetch(`${server.base}/fhir`, {
          method: 'POST',
          headers,
          body: batch(Array(2000).fill('Observation?_count=200&_include=*')).replace('"batch"', '"transaction"'),
        }),
    ],
    ['search: GET Patient?_count=200&_revinclude=*', () => fetch(`${server.base}/fhir/Patient?_count=200&_revinclude=*`, { headers })],
    ['read: GET the 45 MB Binary', () => fetch(`${server.base}/fhir/Binary/${fortyFive}`, { headers })],
  ]
  const pids = { api: server.pid, worker: worker.pid }
  console.log(`${loaded} Synthea Bundles loaded; peak RSS growth per request (MB), answer size, time`)
  for (const [name, run] of cases) {
    const before = Object.fromEntries(
      Object.entries(pids).map(([k, pid]) => {
        writeFileSync(`/proc/${pid}/clear_refs`, '5')
        return [k, field(pid, 'VmRSS')]
      }),
    )
    const t = performance.now()
    const res = await run()
    const size = (await res.arrayBuffer()).byteLength
    const ms = performance.now() - t
    const growth = Object.entries(pids).map(([k, pid]) => `${k} +${mb(field(pid, 'VmHWM') - before[k]).toFixed(0)}`)
    console.log(`${name}: ${res.status}, ${(size / 1024 / 1024).toFixed(1)} MB in ${(ms / 1000).toFixed(1)} s; ${growth.join(', ')}`)
  }
} finally {
  await worker.stop()
  await server.stop()
}
