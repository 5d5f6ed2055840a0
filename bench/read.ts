// Read benchmark: GET /fhir/Patient/{id} with a valid key, 32 connections (wrk), over Synthea patients.
// Usage: bun run bench/read.ts [seconds]
import { writeFileSync } from 'node:fs'
import { BENCH_KEY, startBenchServer, wrk } from './server'
import { syntheaResources } from './synthea'

const seconds = Number(process.argv[2] ?? 15)
const server = await startBenchServer()
try {
  const patients = syntheaResources().filter((r) => r.resourceType === 'Patient')
  const ids: string[] = []
  for (const p of patients) {
    const { id: _drop, ...body } = p
    const res = await fetch(`${server.base}/fhir/Patient`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json' },
      body: JSON.stringify(body),
    })
    if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${await res.text()}`)
    ids.push(((await res.json()) as { id: string }).id)
  }
  const script = '/tmp/bench-read.lua'
  writeFileSync(script, `ids = {${ids.map((i) => `"${i}"`).join(',')}}\nn = 0\nrequest = function()\n  n = n + 1\n  return wrk.format("GET", "/fhir/Patient/" .. ids[(n % #ids) + 1])\nend\n`)
  await wrk(`${server.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds: 3, script }) // warm-up
  const r = await wrk(`${server.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds, script })
  console.log(`read Patient/{id}: ${Math.round(r.rps)} req/s at 32 connections, p50 ${r.p50} ms, p90 ${r.p90} ms, p99 ${r.p99} ms, errors ${r.errors}, server RSS ${server.rssMb()} MB (${ids.length} Synthea patients)`)
  const xmlScript = '/tmp/bench-read-xml.lua'
  writeFileSync(xmlScript, `ids = {${ids.map((i) => `"${i}"`).join(',')}}\nn = 0\nrequest = function()\n  n = n + 1\n  return wrk.format("GET", "/fhir/Patient/" .. ids[(n % #ids) + 1] .. "?_format=xml")\nend\n`)
  const x = await wrk(`${server.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds, script: xmlScript })
  console.log(`read Patient/{id}?_format=xml: ${Math.round(x.rps)} req/s at 32 connections (${Math.round((100 * x.rps) / r.rps)}% of JSON), p50 ${x.p50} ms, p99 ${x.p99} ms, errors ${x.errors}`)
} finally {
  await server.stop()
}
