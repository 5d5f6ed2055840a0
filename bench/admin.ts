// Admin operations on the Synthea data loaded `copies` times (default 10, ~135,000 resources):
// $get-resource-counts latency (p50 over 50 calls, over HTTP), system-level $meta, and the time of
// $expunge with expungeEverything. Usage: bun run bench/admin.ts [copies]
import { loadConfig } from '../shared/config'
import { createSql } from '../shared/db/client'
import { loadSynthea } from './load-synthea'
import { BENCH_KEY, startBenchServer, startBenchWorker } from './server'

const copies = Number(process.argv[2] ?? 10)
const server = await startBenchServer(18083)
// $expunge runs as an admin job on a worker.
const worker = await startBenchWorker(server)
const sql = createSql(server.databaseUrl, { max: 4 })
const call = (path: string, init: RequestInit = {}) =>
  fetch(`${server.base}/fhir${path}`, { ...init, headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json' } })

async function timed(label: string, path: string, n: number): Promise<any> {
  let body: any
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    const res = await call(path)
    body = await res.json()
    if (res.status !== 200) throw new Error(`${label}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`)
    times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(1)
  console.log(`${label}: p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${at(1)} ms over ${n} calls`)
  return body
}

try {
  const t0 = performance.now()
  const n = await loadSynthea(sql, loadConfig({ DATABASE_URL: server.databaseUrl }), copies)
  console.log(`loaded ${n} resources in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  await sql`analyze`
  const counts = await timed('$get-resource-counts', '/$get-resource-counts', 50)
  const total = (counts.parameter ?? []).reduce((a: number, p: any) => a + p.valueInteger, 0)
  console.log(`  ${counts.parameter?.length ?? 0} types, ${total} resources counted (loaded ${n})`)
  const meta = await timed('$meta (system level)', '/$meta', 10)
  console.log(`  ${meta.parameter[0].valueMeta.tag?.length ?? 0} tags, ${meta.parameter[0].valueMeta.profile?.length ?? 0} profiles in use`)
  const [{ rows }] = await sql<{ rows: string }[]>`
    select ((select count(*) from resource) + (select count(*) from resource_history) + (select count(*) from idx_token)
      + (select count(*) from idx_string) + (select count(*) from idx_reference) + (select count(*) from idx_date))::text as rows`
  const t1 = performance.now()
  const res = await call('/$expunge', {
    method: 'POST',
    body: JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'expungeEverything', valueBoolean: true }] }),
  })
  const out = (await res.json()) as any
  const seconds = (performance.now() - t1) / 1000
  if (res.status !== 200) throw new Error(`$expunge: ${res.status} ${JSON.stringify(out).slice(0, 300)}`)
  console.log(
    `$expunge expungeEverything: ${seconds.toFixed(2)} s, count ${out.parameter[0].valueInteger} (resource, history and main index tables held ${rows} rows)`,
  )
  const [{ left }] = await sql<{ left: number }[]>`select count(*)::int as left from resource`
  console.log(`  resources left: ${left}`)
} finally {
  await sql.end()
  await worker.stop()
  await server.stop()
}
