// Search benchmark on the Synthea data loaded `copies` times (default 10, ~135,000 resources).
// Usage: bun run bench/search.ts [copies] [seconds]
import { createSql } from '../shared/db/client'
import { BENCH_KEY, cpuMeter, startBenchServer, wrk } from './server'
import { ensureSynthea } from './load-synthea'
import { pathsScript } from './workload'

const copies = Number(process.argv[2] ?? 10)
const seconds = Number(process.argv[3] ?? 10)
const server = await startBenchServer(18081)
const sql = createSql(server.databaseUrl, { max: 4 })
try {
  await ensureSynthea(sql, server.databaseUrl, copies)
  const patients = await sql<{ id: string; family: string }[]>`
    select r.id, s.value_exact as family from resource r join idx_string s on s.rid = r.rid and s.code = 'family'
    where r.res_type = 'Patient' limit 200`
  const withCode = await sql<{ id: string }[]>`
    select distinct ref.target_id as id from idx_reference ref join idx_token t on t.rid = ref.rid
    where ref.code = 'subject' and ref.res_type = 'Observation' and t.code = 'code' and t.value = '8302-2' limit 200`
  const run = async (label: string, paths: string[], connections: number) => {
    const script = pathsScript(`/tmp/bench-search-${label.replace(/\W+/g, '-')}.lua`, paths)
    const check = await fetch(`${server.base}${paths[0]}`, { headers: { authorization: `Bearer ${BENCH_KEY}` } })
    const body = (await check.json()) as any
    if (check.status !== 200) throw new Error(`${label}: ${check.status} ${JSON.stringify(body).slice(0, 300)}`)
    await wrk(`${server.base}/fhir/metadata`, { connections, seconds: 2, script }) // warm-up
    const cpu = cpuMeter({ server: server.pid })
    const r = await wrk(`${server.base}/fhir/metadata`, { connections, seconds, script })
    console.log(
      `${label}: ${Math.round(r.rps)} req/s at ${connections} connections, p50 ${r.p50} ms, p99 ${r.p99} ms, errors ${r.errors} (first page: ${body.entry?.length ?? 0} entries; ${cpu.perUnit(r.rps * seconds)})`,
    )
  }
  await run(
    'Observation?subject=Patient/{id}&code=http://loinc.org|8302-2',
    withCode.map((p) => `/fhir/Observation?subject=Patient/${p.id}&code=http://loinc.org|8302-2`),
    16,
  )
  await run(
    'Patient?name=<family>',
    patients.map((p) => `/fhir/Patient?name=${encodeURIComponent(p.family)}`),
    16,
  )
  await run(
    'Observation?code=8302-2&date=ge2015&_sort=-date&_count=50',
    ['/fhir/Observation?code=http://loinc.org|8302-2&date=ge2015&_sort=-date&_count=50'],
    1,
  )
  const [{ n: obs }] = await sql<{ n: number }[]>`select count(*)::int as n from resource where res_type = 'Observation'`
  const times: number[] = []
  let total = 0
  for (let i = 0; i < 5; i++) {
    const t = performance.now()
    const res = await fetch(`${server.base}/fhir/Observation?_total=accurate&_count=1`, { headers: { authorization: `Bearer ${BENCH_KEY}` } })
    total = ((await res.json()) as any).total
    times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  console.log(`Observation?_total=accurate&_count=1: total ${total} (of ${obs} Observations), median ${times[2].toFixed(1)} ms`)
} finally {
  await sql.end()
  await server.stop()
}
