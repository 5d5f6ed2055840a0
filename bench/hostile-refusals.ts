// How long each refusal of issue 19 takes, against an API node and a worker (the cluster form) on a fresh
// database: a 32 MB body without a key, search shapes beyond the limits, a burst of requests with a bad
// key (how many got through), a Bundle with a NUL byte (attempted once).
// Usage: bun run bench/hostile-refusals.ts
import { BENCH_KEY, startBenchServer, startBenchWorker } from './server'

const server = await startBenchServer(18091)
const worker = await startBenchWorker(server)
const auth = { authorization: `Bearer ${BENCH_KEY}` }
const repeat = (n: number, f: (i: number) => string, sep = '&') => Array.from({ length: n }, (_, i) => f(i)).join(sep)
try {
  const cases: [string, () => Promise<Response>][] = [
    [
      'POST /fhir/metadata, 32 MB XML, no key',
      () =>
        fetch(`${server.base}/fhir/metadata`, {
          method: 'POST',
          body: `<Bundle xmlns="http://hl7.org/fhir">${'<x/>'.repeat(8 * 1024 * 1024)}</Bundle>`,
          headers: { 'content-type': 'application/fhir+xml' },
        }),
    ],
    ['Patient?name=x repeated 400 times', () => fetch(`${server.base}/fhir/Patient?${repeat(400, (i) => `name=x${i}`)}`, { headers: auth })],
    [
      '_filter with 200 or',
      () => fetch(`${server.base}/fhir/Patient?_filter=${encodeURIComponent(repeat(201, (i) => `name eq x${i}`, ' or '))}`, { headers: auth }),
    ],
    ['_sort with 100 keys', () => fetch(`${server.base}/fhir/Patient?_sort=${repeat(100, () => 'name', ',')}`, { headers: auth })],
    [
      'transaction with a NUL byte',
      () =>
        fetch(`${server.base}/fhir`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/fhir+json' },
          body: JSON.stringify({
            resourceType: 'Bundle',
            type: 'transaction',
            entry: [{ resource: { resourceType: 'Patient', name: [{ family: 'a\u0000' }] }, request: { method: 'POST', url: 'Patient' } }],
          }),
        }),
    ],
  ]
  for (const [name, run] of cases) {
    const t = performance.now()
    const res = await run()
    await res.arrayBuffer()
    console.log(`${name}: ${res.status} in ${(performance.now() - t).toFixed(0)} ms`)
  }
  const t = performance.now()
  const burst = await Promise.all(
    Array.from({ length: 2000 }, () =>
      fetch(`${server.base}/fhir/Patient`, { headers: { authorization: 'Bearer nope' } }).then(async (r) => (await r.arrayBuffer(), r.status)),
    ),
  )
  const counts = burst.reduce<Record<number, number>>((c, s) => ((c[s] = (c[s] ?? 0) + 1), c), {})
  console.log(`2,000 requests with a bad key at once: ${JSON.stringify(counts)} in ${(performance.now() - t).toFixed(0)} ms`)
} finally {
  await worker.stop()
  await server.stop()
}
