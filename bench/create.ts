// Create benchmark: single POST /fhir/Observation with a Synthea Observation, 16 connections (wrk).
// Usage: bun run bench/create.ts [seconds] [warm-up seconds, default 10: the JIT of the write path settles
// in about 10-20 s, and a server runs far longer than a benchmark]
import { writeFileSync } from 'node:fs'
import { BENCH_KEY, cpuMeter, startBenchServer, wrk } from './server'
import { syntheaResources } from './synthea'

const seconds = Number(process.argv[2] ?? 15)
const warmup = Number(process.argv[3] ?? 10)
const server = await startBenchServer(
  18080,
  process.env.BENCH_ENV ? Object.fromEntries(process.env.BENCH_ENV.split(',').map((kv) => kv.split('=') as [string, string])) : {},
)
try {
  const obs = syntheaResources('synthea-smart', 3)
    .filter((r) => r.resourceType === 'Observation')
    .slice(0, 200)
  // The Observations reference a Patient and an Encounter that exist (references are checked on write).
  const put = (path: string, body: object) =>
    fetch(`${server.base}/fhir/${path}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json' },
      body: JSON.stringify(body),
    })
  await put('Patient/bench-p', { resourceType: 'Patient', id: 'bench-p' })
  await put('Encounter/bench-e', {
    resourceType: 'Encounter',
    id: 'bench-e',
    status: 'finished',
    class: { code: 'AMB' },
    subject: { reference: 'Patient/bench-p' },
  })
  const bodies = obs.map(({ id: _drop, ...o }) =>
    JSON.stringify({ ...o, subject: { reference: 'Patient/bench-p' }, encounter: { reference: 'Encounter/bench-e' } }),
  )
  const script = '/tmp/bench-create.lua'
  const lua = bodies.map((b) => `[==[${b}]==]`).join(',\n')
  writeFileSync(
    script,
    `bodies = {${lua}}\nn = 0\nwrk.method = "POST"\nwrk.headers["Content-Type"] = "application/fhir+json"\nwrk.headers["Prefer"] = "return=minimal"\nrequest = function()\n  n = n + 1\n  return wrk.format(nil, nil, nil, bodies[(n % #bodies) + 1])\nend\n`,
  )
  const url = `${server.base}/fhir/Observation`
  await wrk(url, { connections: 16, seconds: warmup, script }) // warm-up
  const cpu = cpuMeter({ server: server.pid })
  const r = await wrk(url, { connections: 16, seconds, script })
  console.log(
    `create Observation: ${Math.round(r.rps)} req/s at 16 connections, p50 ${r.p50} ms, p90 ${r.p90} ms, p99 ${r.p99} ms, errors ${r.errors}, server RSS ${server.rssMb()} MB; ${cpu.perUnit(r.rps * seconds)}`,
  )
} finally {
  await server.stop()
}
