// Latency of the searches bench/search.ts does not load-test: chains, _has, includes, compartments,
// ranges, :not, sorts, on the Synthea data loaded `copies` times (default 10). Sequential requests, 20
// timed per query after 5 of warm-up; prints p50 and max.
// Usage: bun run bench/search-complex.ts [copies]   (BENCH_DB=<db> reuses a loaded database)
import { createSql } from '../shared/db/client'
import { ensureSynthea } from './load-synthea'
import { BENCH_KEY, startBenchServer } from './server'

const copies = Number(process.argv[2] ?? 10)
const server = await startBenchServer(18085)
const sql = createSql(server.databaseUrl, { max: 2 })
try {
  await ensureSynthea(sql, server.databaseUrl, copies)
  const families = (await sql<{ f: string }[]>`select value_exact as f from idx_string where code = 'family' and res_type = 'Patient' limit 20`).map((r) => r.f)
  const patients = (await sql<{ id: string }[]>`select id from resource where res_type = 'Patient' limit 20`).map((r) => r.id)
  const queries: [string, (i: number) => string][] = [
    ['Observation?subject.name=<family>&code=', (i) => `/fhir/Observation?subject.name=${families[i % 20]}&code=http://loinc.org|8302-2`],
    ['Patient?_has:Observation:patient:code=&name=', (i) => `/fhir/Patient?_has:Observation:patient:code=8302-2&name=${families[i % 20]}`],
    ['Observation?patient.birthdate=ge1990&code=', () => '/fhir/Observation?patient.birthdate=ge1990&code=http://loinc.org|8302-2&_count=10'],
    ['Encounter?patient=&_include=Encounter:patient', (i) => `/fhir/Encounter?patient=${patients[i % 20]}&_include=Encounter:patient&_count=50`],
    ['Patient?_id=&_revinclude=Encounter:patient', (i) => `/fhir/Patient?_id=${patients[i % 20]}&_revinclude=Encounter:patient`],
    ['Patient/{id}/Condition (compartment)', (i) => `/fhir/Patient/${patients[i % 20]}/Condition`],
    ['Patient?name=&_total=accurate', (i) => `/fhir/Patient?name=${families[i % 20]}&_total=accurate`],
    ['Observation?date=<one month>&code=', () => '/fhir/Observation?date=ge2019-01-01&date=lt2019-02-01&code=http://loinc.org|8302-2'],
    ['Condition?patient=&clinical-status:not=', (i) => `/fhir/Condition?patient=${patients[i % 20]}&clinical-status:not=resolved`],
    ['Patient?gender=female&_sort=family', () => '/fhir/Patient?_sort=family&_count=20&gender=female'],
  ]
  for (const [label, path] of queries) {
    const times: number[] = []
    for (let i = 0; i < 25; i++) {
      const t = performance.now()
      const res = await fetch(`${server.base}${path(i)}`, { headers: { authorization: `Bearer ${BENCH_KEY}` } })
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`${label}: ${res.status}`)
      if (i >= 5) times.push(performance.now() - t)
    }
    times.sort((a, b) => a - b)
    console.log(`${label}: p50 ${times[times.length >> 1].toFixed(1)} ms, max ${times[times.length - 1].toFixed(1)} ms`)
  }
} finally {
  await sql.end()
  await server.stop()
}
