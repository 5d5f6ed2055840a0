// Worker memory of an $export of large resources (issue 19): `count` DocumentReferences with `mb` MB of
// attachment data inline each, exported by type from a fresh database (API node and worker processes, the
// cluster form, files in PostgreSQL). Prints the worker's peak RSS growth over its idle RSS and the time.
// Usage: bun run bench/export-large.ts [count=60] [mb=4] [extra query, e.g. _elements=status]
//   (BENCH_TREE=<checkout> runs another tree's processes)
import { BENCH_KEY, bulkManifest, rssPeak, startBenchServer, startBenchWorker } from './server'

const count = Number(process.argv[2] ?? 60)
const mb = Number(process.argv[3] ?? 4)
const extra = process.argv[4] ? `&${process.argv[4]}` : ''
const headers = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json' }
const server = await startBenchServer(18095)
const worker = await startBenchWorker(server)
try {
  const data = 'QUFB'.repeat((mb * 1024 * 1024) / 4)
  for (let i = 0; i < count; i++) {
    const doc = { resourceType: 'DocumentReference', id: `large-${i}`, status: 'current', content: [{ attachment: { contentType: 'text/plain', data } }] }
    const res = await fetch(`${server.base}/fhir/DocumentReference/${doc.id}`, { method: 'PUT', headers, body: JSON.stringify(doc) })
    if (res.status !== 201) throw new Error(`PUT: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  }
  await Bun.sleep(1000)
  const rss = rssPeak(worker.pid)
  const t0 = performance.now()
  const kick = await fetch(`${server.base}/fhir/$export?_type=DocumentReference${extra}`, { headers: { ...headers, prefer: 'respond-async' } })
  if (kick.status !== 202) throw new Error(`kick-off: ${kick.status} ${await kick.text()}`)
  const { manifest, seconds } = await bulkManifest(kick.headers.get('content-location') as string, headers, t0)
  const peak = rss.stop()
  const exported = (manifest.output as { count: number }[]).reduce((n, o) => n + o.count, 0)
  console.log(
    `${count} DocumentReferences of ${mb} MB: ${exported} exported in ${seconds.toFixed(1)} s; worker RSS idle ${rss.idle} MB, peak ${peak} MB, growth ${peak - rss.idle} MB`,
  )
} finally {
  await worker.stop()
  await server.stop()
}
