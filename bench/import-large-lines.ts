// Worker memory of an $import of large NDJSON lines (issue 19): n lines of about `mb` MB each (under
// BULK_IMPORT_MAX_LINE_BYTES, 16 MB by default), served by a local origin in this process, imported by a
// worker process through the API node (the cluster form) into a fresh database. For each n, fresh
// processes; the worker's peak RSS growth is VmHWM (reset just before the kick-off) minus VmRSS then.
// Kinds: `binary` (Binary.data, base64), `observation` (Observation.valueString, words: full-text text),
// `patient` (one name: string index rows and full text), `mixed` (each large Binary line between 200 small
// Observations).
// --update: the lines are imported once first, and the figure is that of a second import of the same
// resources changed (each an update: planned against its current version, written without COPY).
// Usage: bun run bench/import-large-lines.ts [n,n,...=1,3,12] [--mb=15] [--kind=binary] [--update]
import { readFileSync, writeFileSync } from 'node:fs'
import { BENCH_KEY, bulkManifest, startBenchServer, startBenchWorker } from './server'

const args = process.argv.slice(2)
const counts = (args.find((a) => !a.startsWith('--')) ?? '1,3,12').split(',').map(Number)
const mb = Number(args.find((a) => a.startsWith('--mb='))?.slice(5) ?? 15)
const kind = args.find((a) => a.startsWith('--kind='))?.slice(7) ?? 'binary'
const update = args.includes('--update')
const MB = 1024 * 1024
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 0)

function largeLine(id: string, fill: string): string {
  const chars = Math.floor(mb * MB)
  if (kind === 'observation') {
    const words = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu '
    return JSON.stringify({
      resourceType: 'Observation',
      id,
      status: 'final',
      code: { text: 'large' },
      valueString: fill + words.repeat(Math.ceil(chars / words.length)).slice(0, chars),
    })
  }
  if (kind === 'patient') {
    // One name of that size: indexed by name, family and phonetic, and in the full text.
    const family = fill + 'bcdefghij'.repeat(Math.ceil(chars / 9)).slice(0, chars)
    return JSON.stringify({ resourceType: 'Patient', id, name: [{ family }] })
  }
  return JSON.stringify({ resourceType: 'Binary', id, contentType: 'application/octet-stream', data: `${fill}UFB`.repeat(Math.floor(chars / 4)) })
}

function small(id: string): string {
  return JSON.stringify({
    resourceType: 'Observation',
    id,
    status: 'final',
    code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
    valueQuantity: { value: 170, unit: 'cm' },
  })
}

function fileOf(n: number, fill = 'Q'): Uint8Array {
  const lines: string[] = []
  for (let i = 0; i < n; i++) {
    if (kind === 'mixed') for (let j = 0; j < 200; j++) lines.push(small(`small-${n}-${i}-${j}`))
    lines.push(largeLine(`large-${n}-${i}`, fill))
  }
  if (kind === 'mixed') for (let j = 0; j < 200; j++) lines.push(small(`small-${n}-end-${j}`))
  return new TextEncoder().encode(`${lines.join('\n')}\n`)
}

const files = new Map<string, Uint8Array>()
const origin = Bun.serve({
  port: 18651 + PORT_OFFSET,
  hostname: '127.0.0.1',
  fetch: (req) => {
    const file = files.get(new URL(req.url).pathname)
    return file ? new Response(file, { headers: { 'content-type': 'application/fhir+ndjson' } }) : new Response('not found', { status: 404 })
  },
})
const originUrl = `http://127.0.0.1:${origin.port}`
process.env.BULK_IMPORT_ORIGINS = originUrl // for the API node and the worker
process.env.OUTBOUND_ALLOW = '127.0.0.1' // the outbound client reaches the loopback origin

const type = kind === 'binary' ? 'Binary' : kind === 'patient' ? 'Patient' : 'Observation'
const headers = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json', prefer: 'respond-async' }
const bodyOf = (path: string, type: string) =>
  JSON.stringify({
    resourceType: 'Parameters',
    parameter: [
      { name: 'inputFormat', valueCode: 'application/fhir+ndjson' },
      {
        name: 'input',
        part: [
          { name: 'type', valueCode: type },
          { name: 'url', valueUri: `${originUrl}${path}` },
        ],
      },
    ],
  })
const statusKb = (pid: number, field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)

files.set('/warm-up.ndjson', new TextEncoder().encode(`${small('warm-up')}\n`))
try {
  console.log(`$import of n lines of ${mb} MB (${kind}); worker peak RSS growth (VmHWM - VmRSS before the kick-off)`)
  for (const n of counts) {
    files.set(`/large-${n}.ndjson`, fileOf(n))
    if (update) files.set(`/first-${n}.ndjson`, fileOf(n, 'R'))
    const server = await startBenchServer(18650)
    const worker = await startBenchWorker(server)
    try {
      // One small import first: the worker has started and taken a job (its idle memory is then its own).
      const warm = await fetch(`${server.base}/fhir/$import`, { method: 'POST', headers, body: bodyOf('/warm-up.ndjson', 'Observation') })
      await bulkManifest(warm.headers.get('content-location') as string, headers, performance.now())
      if (update) {
        const first = await fetch(`${server.base}/fhir/$import`, { method: 'POST', headers, body: bodyOf(`/first-${n}.ndjson`, type) })
        await bulkManifest(first.headers.get('content-location') as string, headers, performance.now())
      }
      writeFileSync(`/proc/${worker.pid}/clear_refs`, '5') // VmHWM back to the current RSS
      const before = statusKb(worker.pid, 'VmRSS')
      const t0 = performance.now()
      const res = await fetch(`${server.base}/fhir/$import`, { method: 'POST', headers, body: bodyOf(`/large-${n}.ndjson`, type) })
      if (res.status !== 202) throw new Error(`kick-off: ${res.status} ${await res.text()}`)
      const { manifest, seconds } = await bulkManifest(res.headers.get('content-location') as string, headers, t0)
      const growth = (statusKb(worker.pid, 'VmHWM') - before) / 1024
      const created = manifest.output.reduce((a: number, o: any) => a + o.created + o.updated, 0)
      const errors = manifest.error.reduce((a: number, e: any) => a + e.count, 0)
      console.log(
        `n=${n}: ${created} ${update ? 'updated' : 'created'}, ${errors} errors in ${seconds.toFixed(1)} s; worker RSS before ${(before / 1024).toFixed(0)} MB, peak growth ${growth.toFixed(0)} MB`,
      )
    } finally {
      await worker.stop()
      await server.stop()
    }
    files.delete(`/large-${n}.ndjson`)
    files.delete(`/first-${n}.ndjson`)
  }
} finally {
  origin.stop(true)
}
