// Read benchmark: GET /fhir/Patient/{id} with a valid key, 32 connections (wrk), over Synthea patients.
// Usage: bun run bench/read.ts [seconds]
import { cpuMeter, startBenchServer, wrk } from './server'
import { pathsScript, seedPatients } from './workload'

const seconds = Number(process.argv[2] ?? 15)
const server = await startBenchServer()
try {
  const ids = await seedPatients(server.base)
  const script = pathsScript(
    '/tmp/bench-read.lua',
    ids.map((id) => `/fhir/Patient/${id}`),
  )
  await wrk(`${server.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds: 3, script }) // warm-up
  let cpu = cpuMeter({ server: server.pid })
  const r = await wrk(`${server.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds, script })
  console.log(
    `read Patient/{id}: ${Math.round(r.rps)} req/s at 32 connections, p50 ${r.p50} ms, p90 ${r.p90} ms, p99 ${r.p99} ms, errors ${r.errors}, server RSS ${server.rssMb()} MB (${ids.length} Synthea patients; ${cpu.perUnit(r.rps * seconds)})`,
  )
  const xmlScript = pathsScript(
    '/tmp/bench-read-xml.lua',
    ids.map((id) => `/fhir/Patient/${id}?_format=xml`),
  )
  await wrk(`${server.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds: 3, script: xmlScript }) // warm-up, as for JSON: the XML writer's JIT
  cpu = cpuMeter({ server: server.pid })
  const x = await wrk(`${server.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds, script: xmlScript })
  console.log(
    `read Patient/{id}?_format=xml: ${Math.round(x.rps)} req/s at 32 connections (${Math.round((100 * x.rps) / r.rps)}% of JSON), p50 ${x.p50} ms, p99 ${x.p99} ms, errors ${x.errors} (XML render cache on: these ${ids.length} patients are all cache hits; ${cpu.perUnit(x.rps * seconds)})`,
  )
} finally {
  await server.stop()
}

// The same XML reads with the render cache off: every read converts the stored JSON (a cold read).
const cold = await startBenchServer(18080, { XML_RENDER_CACHE_MB: '0' })
try {
  const ids = await seedPatients(cold.base)
  const jsonScript = pathsScript(
    '/tmp/bench-read.lua',
    ids.map((id) => `/fhir/Patient/${id}`),
  )
  await wrk(`${cold.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds: 3, script: jsonScript })
  let cpu = cpuMeter({ server: cold.pid })
  const r = await wrk(`${cold.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds, script: jsonScript })
  const jsonCpu = cpu.perUnit(r.rps * seconds)
  const xmlScript = pathsScript(
    '/tmp/bench-read-xml.lua',
    ids.map((id) => `/fhir/Patient/${id}?_format=xml`),
  )
  await wrk(`${cold.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds: 3, script: xmlScript })
  cpu = cpuMeter({ server: cold.pid })
  const x = await wrk(`${cold.base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds, script: xmlScript })
  console.log(
    `cache off: JSON ${Math.round(r.rps)} req/s (${jsonCpu}), XML ${Math.round(x.rps)} req/s (${Math.round((100 * x.rps) / r.rps)}% of JSON; ${cpu.perUnit(x.rps * seconds)}), XML p99 ${x.p99} ms`,
  )
} finally {
  await cold.stop()
}
