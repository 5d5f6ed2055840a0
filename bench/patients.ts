// Patient API list endpoints under load: GET /patients, /patients/{id}/patient-flows, /patients/{id}/sessions
// and /connections (limit 10), 32 connections (wrk), through the whole edge (org key, Version, rate
// limit counted in Redis with a limit set out of reach, request id, envelope).
// Usage: bun run bench/patients.ts [seconds]
import { writeFileSync } from 'node:fs'
import { BENCH_KEY, cpuMeter, startBenchServer, wrk } from './server'

const seconds = Number(process.argv[2] ?? 10)
// The limit is set out of reach so that the Redis counter is exercised; PATIENT_API_RATE_LIMIT=0 measures without it.
const server = await startBenchServer(18087, { PATIENT_API_RATE_LIMIT: process.env.PATIENT_API_RATE_LIMIT ?? '1000000000' })

async function post(path: string, key: string, json: unknown): Promise<any> {
  const res = await fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(json),
  })
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`)
  return res.json()
}

function script(file: string, key: string, paths: string[]): string {
  const list = paths.map((p) => JSON.stringify(p)).join(',')
  writeFileSync(
    file,
    `paths = {${list}}\nheaders = {["Authorization"] = "Bearer ${key}"}\nn = 0\nrequest = function()\n  n = n + 1\n  return wrk.format("GET", paths[(n % #paths) + 1], headers)\nend\n`,
  )
  return file
}

try {
  const org = await post('/admin/organizations', BENCH_KEY, { name: 'Bench' })
  const { key } = await post(`/admin/organizations/${org.id}/api-keys`, BENCH_KEY, { label: 'bench' })
  const sources: string[] = []
  for (let i = 0; i < 30; i++)
    sources.push(
      (await post('/admin/fhir-sources', BENCH_KEY, { name: `EHR ${i}`, type: i % 2 ? 'epic' : 'cerner', fhir_base_url: `https://ehr${i}.example.com/fhir` }))
        .id,
    )
  const patients: string[] = []
  for (let i = 0; i < 200; i++) patients.push((await post('/patients', key, { patient_id: `bench-${i}`, email: `p${i}@example.com` })).id)
  for (const p of patients.slice(0, 20)) {
    for (let i = 0; i < 15; i++) {
      await post('/patient-flows', key, { patient_id: p, return_url: 'https://app.example.com/back', recommended_connection_ids: sources.slice(0, 3) })
      await post('/sessions', key, { patient_id: p, return_url: 'https://app.example.com/back' })
    }
  }
  const cases: [string, string[]][] = [
    ['GET /patients?limit=10', ['/patients?limit=10']],
    ['GET /patients/{id}/patient-flows', patients.slice(0, 20).map((p) => `/patients/${p}/patient-flows?limit=10`)],
    ['GET /patients/{id}/sessions', patients.slice(0, 20).map((p) => `/patients/${p}/sessions?limit=10`)],
    ['GET /connections?limit=10', ['/connections?limit=10']],
  ]
  for (const [label, paths] of cases) {
    const file = script(`/tmp/bench-patients-${label.replace(/\W+/g, '-')}.lua`, key, paths)
    await wrk(`${server.base}${paths[0]}`, { connections: 32, seconds: 2, script: file }) // warm-up
    const cpu = cpuMeter({ server: server.pid })
    const r = await wrk(`${server.base}${paths[0]}`, { connections: 32, seconds, script: file })
    console.log(
      `${label}: ${Math.round(r.rps)} req/s at 32 connections, p50 ${r.p50} ms, p99 ${r.p99} ms, errors ${r.errors} (${cpu.perUnit(r.rps * seconds)})`,
    )
  }
} finally {
  await server.stop()
}
