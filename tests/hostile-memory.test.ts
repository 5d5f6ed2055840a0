// Issue 19, memory: a batch whose GET entries read far more than MAX_BUNDLE_RESPONSE_BYTES (25 reads of one
// 10 MB resource; 200 searches that each return it with `_revinclude=*`) is answered with the entries that
// fit and a 413 outcome for each of the others, and neither the API node nor the worker (separate
// processes, as in the cluster form) grows by the size of everything asked for: their peak RSS (VmHWM,
// reset before) stays within 256 MB of where it was.
import { expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { useProcessCluster } from './process-cluster'

const cluster = useProcessCluster('memory')
const MB = 1024 * 1024

function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1]) / 1024
}

async function batch(urls: string[]): Promise<{ status: number; bytes: number; body: any }> {
  const entry = urls.map((url) => ({ request: { method: 'GET', url } }))
  const res = await cluster.fhirFetch('', {
    method: 'POST',
    body: JSON.stringify({ resourceType: 'Bundle', type: 'batch', entry }),
    headers: { 'content-type': 'application/fhir+json' },
  })
  const text = await res.text()
  return { status: res.status, bytes: text.length, body: JSON.parse(text) }
}

test('GET entries beyond MAX_BUNDLE_RESPONSE_BYTES: 413 per entry; the answer and both processes stay bounded', async () => {
  const worker = cluster.spawn('workers/main.ts')
  const created = await cluster.fhirFetch('/Binary', {
    method: 'POST',
    body: JSON.stringify({ resourceType: 'Binary', contentType: 'application/octet-stream', data: 'QUFB'.repeat((10 * MB) / 4) }),
    headers: { 'content-type': 'application/fhir+json' },
  })
  expect(created.status).toBe(201)
  const { id } = (await created.json()) as { id: string }
  await batch([`Binary/${id}`]) // both processes warm
  const max = 16 * MB // MAX_BUNDLE_RESPONSE_BYTES's default
  const pids = [cluster.api.pid, worker.pid]
  const before = pids.map((pid) => {
    writeFileSync(`/proc/${pid}/clear_refs`, '5') // resets VmHWM to the current RSS
    return statusMb(pid, 'VmRSS')
  })
  const reads = await batch(Array.from({ length: 25 }, () => `Binary/${id}`))
  const searches = await batch(Array.from({ length: 200 }, () => 'Binary?_count=200&_revinclude=*'))
  const growth = pids.map((pid, i) => statusMb(pid, 'VmHWM') - before[i])
  console.log(`peak RSS growth: API node ${growth[0].toFixed(0)} MB, worker ${growth[1].toFixed(0)} MB`)
  for (const answer of [reads, searches]) {
    expect(answer.status).toBe(200)
    expect(answer.bytes).toBeLessThan(max + MB)
    const statuses = answer.body.entry.map((e: any) => e.response.status)
    const served = statuses.filter((x: string) => x.startsWith('200')).length
    expect(served).toBeGreaterThan(0)
    expect(served).toBeLessThanOrEqual(Math.floor(max / (10 * MB)))
    const refused = answer.body.entry.filter((e: any) => e.response.status.startsWith('413'))
    expect(refused.length).toBe(statuses.length - served)
    expect(refused[0].response.outcome.issue[0].diagnostics).toContain('MAX_BUNDLE_RESPONSE_BYTES')
  }
  for (const g of growth) expect(g).toBeLessThan(256)
}, 120_000)
