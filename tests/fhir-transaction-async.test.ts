// Transactions with Prefer: respond-async: 202 and a status URL ($bundle-status) reporting progress, then
// the transaction-response. https://hl7.org/fhir/R4/async.html
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { diagnostics, largestBundles } from './bundle-http'
import { readJson, useTestServer } from './harness'

const s = useTestServer()

describe('Prefer: respond-async', () => {
  test('202 with a status URL reporting progress, then 200 with the transaction-response', async () => {
    const file = largestBundles(1)[0]
    const entries = JSON.parse(readFileSync(file, 'utf8')).entry.length
    const res = await s.fhirFetch('', {
      method: 'POST',
      body: readFileSync(file),
      headers: { 'content-type': 'application/fhir+json', prefer: 'respond-async' },
    })
    expect(res.status).toBe(202)
    await res.arrayBuffer()
    const location = res.headers.get('content-location') as string
    expect(location).toMatch(/\/fhir\/\$bundle-status\?_jobId=[^&]+$/)
    const progress: string[] = []
    let done: Response | undefined
    for (const started = Date.now(); Date.now() - started < 60_000; ) {
      const r = await s.fhirFetch(location.slice(location.indexOf('/fhir') + '/fhir'.length))
      if (r.status === 202) {
        progress.push(r.headers.get('x-progress') ?? '(none)')
        await r.arrayBuffer()
        await Bun.sleep(20)
        continue
      }
      done = r
      break
    }
    expect(done?.status).toBe(200)
    const body = await readJson(done as Response)
    expect(body.type).toBe('transaction-response')
    expect(body.entry).toHaveLength(entries)
    expect(body.entry.every((e: any) => e.response.status === '201 Created')).toBe(true)
    expect(progress.length).toBeGreaterThan(0)
    for (const p of progress) expect(p).toMatch(/^(\d+ of \d+ entries|queued|running)$/)
    expect(progress.some((p) => /^\d+ of \d+ entries$/.test(p) && p.endsWith(` of ${entries} entries`)) || progress.includes('queued')).toBe(true)
  }, 90_000)

  test('an unknown job id: 404', async () => {
    const res = await s.fhirFetch('/$bundle-status?_jobId=no-such-job-4711')
    expect(res.status).toBe(404)
    await diagnostics(res)
  })
})
