// Create benchmark: single POST /fhir/Observation with a Synthea Observation, 16 connections (wrk).
// Usage: bun run bench/create.ts [seconds]
import { writeFileSync } from 'node:fs'
import { startBenchServer, wrk } from './server'
import { syntheaResources } from './synthea'

const seconds = Number(process.argv[2] ?? 15)
const server = await startBenchServer()
try {
  const obs = syntheaResources('synthea-smart', 3).filter((r) => r.resourceType === 'Observation').slice(0, 200)
  // References to other bundle entries are urn:uuid placeholders; point them at plain ids instead.
  const bodies = obs.map(({ id: _drop, ...o }) => JSON.stringify(o).replace(/urn:uuid:([0-9a-f-]+)/g, 'Patient/p-$1'))
  const script = '/tmp/bench-create.lua'
  const lua = bodies.map((b) => `[==[${b}]==]`).join(',\n')
  writeFileSync(script, `bodies = {${lua}}\nn = 0\nwrk.method = "POST"\nwrk.headers["Content-Type"] = "application/fhir+json"\nwrk.headers["Prefer"] = "return=minimal"\nrequest = function()\n  n = n + 1\n  return wrk.format(nil, nil, nil, bodies[(n % #bodies) + 1])\nend\n`)
  const url = `${server.base}/fhir/Observation`
  await wrk(url, { connections: 16, seconds: 3, script }) // warm-up
  const r = await wrk(url, { connections: 16, seconds, script })
  console.log(`create Observation: ${Math.round(r.rps)} req/s at 16 connections, p50 ${r.p50} ms, p90 ${r.p90} ms, p99 ${r.p99} ms, errors ${r.errors}, server RSS ${server.rssMb()} MB`)
} finally {
  await server.stop()
}
