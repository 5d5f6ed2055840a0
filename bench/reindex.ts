// $reindex throughput: loads the Synthea bundles `copies` times (10 copies ≈ 135,000 resources), then
// runs a full $reindex on one worker process and prints resources/s from the job's own timestamps.
// Usage: bun run bench/reindex.ts [copies]
import { loadConfig } from '../shared/config'
import { createSql } from '../shared/db/client'
import { loadSynthea } from './load-synthea'
import { BENCH_KEY, startBenchServer, startBenchWorker } from './server'

const copies = Number(process.argv[2] ?? 10)
const server = await startBenchServer(18082)
const worker = await startBenchWorker(server)
const sql = createSql(server.databaseUrl, { max: 4 })
const auth = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json' }
try {
  const n = await loadSynthea(sql, loadConfig({ DATABASE_URL: server.databaseUrl }), copies)
  await sql`analyze`
  console.log(`loaded ${n} resources`)
  const res = await fetch(`${server.base}/fhir/$reindex`, { method: 'POST', headers: auth, body: JSON.stringify({ resourceType: 'Parameters' }) })
  const jobId = ((await res.json()) as any).parameter[0].valueString
  let job: any
  for (;;) {
    job = await (await fetch(`${server.base}/admin/jobs/${jobId}`, { headers: auth })).json()
    if (['completed', 'failed', 'cancelled'].includes(job.state)) break
    await Bun.sleep(200)
  }
  const seconds = (Date.parse(job.finishedAt) - Date.parse(job.startedAt)) / 1000
  console.log(
    `$reindex: ${job.state}, ${job.processed} of ${job.total} resources in ${seconds.toFixed(1)} s = ${Math.round(job.processed / seconds)} resources/s`,
  )
} finally {
  await sql.end()
  await worker.stop()
  await server.stop()
}
