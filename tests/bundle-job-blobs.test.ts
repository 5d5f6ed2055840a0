// A transaction Bundle travels to the worker beside its job, as its own Redis key (shared/jobs/blobs.ts),
// not inside the job's JSON data; the key goes once the job is finished. The response Bundle comes back
// the same way: BullMQ keeps a pointer, the text has its own key for as long as the job is kept.
import { afterAll, describe, expect, test } from 'bun:test'
import IORedis from 'ioredis'
import { useTestServer } from './harness'

const s = useTestServer()
const redis = new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
afterAll(() => redis.quit())

const bundle = (family: string) => ({
  resourceType: 'Bundle',
  type: 'transaction',
  entry: [
    {
      fullUrl: 'urn:uuid:11111111-2222-3333-4444-555555555555',
      resource: { resourceType: 'Patient', name: [{ family }] },
      request: { method: 'POST', url: 'Patient' },
    },
  ],
})

// Waits end when their condition holds; their bounds are for a loaded machine (a fixed count of short
// sleeps, about 1 s, was the whole margin of the key checks below).
async function finished(statusUrl: string): Promise<Response> {
  for (const until = Date.now() + 20_000; Date.now() < until; await Bun.sleep(50)) {
    const res = await s.fhirFetch(statusUrl.slice(s.fhir.length))
    if (res.status !== 202) return res
    await res.body?.cancel()
  }
  throw new Error('job did not finish')
}

/** The blob keys matching `pattern`, read until there are `n` of them (or 15 s have passed). */
async function keysUntil(pattern: string, n: number): Promise<string[]> {
  let left: string[] = []
  for (const until = Date.now() + 15_000; Date.now() < until; await Bun.sleep(25)) {
    left = await redis.keys(pattern)
    if (left.length === n) break
  }
  return left
}

describe('transaction bundle job payload', () => {
  test('the Bundle is not in the job data, and its key is gone when the job completes; the response is beside the job', async () => {
    const res = await s.fhirFetch('', { method: 'POST', json: bundle('Blobfamily'), headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(202)
    const statusUrl = res.headers.get('content-location') as string
    const jobId = decodeURIComponent(statusUrl.split('_jobId=')[1])
    const data = await redis.hget(`${s.config.queuePrefix}:transaction-bundle:${jobId}`, 'data')
    expect(data).not.toContain('Blobfamily')
    expect(JSON.parse(data as string).__blobs).toEqual(['body'])
    const done = await finished(statusUrl)
    expect(done.status).toBe(200)
    expect(((await done.json()) as any).entry[0].response.status).toBe('201 Created')
    const found = (await (await s.fhirFetch('/Patient?family=Blobfamily')).json()) as any
    expect(found.total).toBe(1)
    // the 'completed' event that drops the key follows the job's completion closely
    const left = await keysUntil(`${s.config.queuePrefix}:transaction-bundle:blob:${jobId}:*`, 1)
    const resultKey = `${s.config.queuePrefix}:transaction-bundle:blob:${jobId}:result`
    expect(left).toEqual([resultKey])
    // BullMQ holds a pointer; the response Bundle is the key's text, kept as long as the job (an hour)
    const returned = await redis.hget(`${s.config.queuePrefix}:transaction-bundle:${jobId}`, 'returnvalue')
    expect(JSON.parse(returned as string)).toEqual({ __result: true })
    expect(JSON.parse((await redis.get(resultKey)) as string).type).toBe('transaction-response')
    const ttl = await redis.ttl(resultKey)
    expect(ttl > 3500 && ttl <= 3600).toBe(true)
    // the status URL serves it again, from any node
    expect(((await (await s.fhirFetch(statusUrl.slice(s.fhir.length))).json()) as any).entry[0].response.status).toBe('201 Created')
  })

  test('a synchronous transaction answers with the response text kept beside its job', async () => {
    const res = await s.fhirFetch('', { method: 'POST', json: bundle('Blobsync') })
    expect(res.status).toBe(200)
    const body = (await res.json()) as any
    expect(body.entry[0].response.status).toBe('201 Created')
    const keys = await redis.keys(`${s.config.queuePrefix}:transaction-bundle:blob:*:result`)
    const texts = await Promise.all(keys.map((k) => redis.get(k)))
    expect(texts.filter((t) => t?.includes(body.entry[0].response.location))).toHaveLength(1)
  })

  test('a Bundle that fails on the worker reports its error and leaves no payload key behind', async () => {
    const bad = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        {
          resource: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: 'Patient/blob-missing' } },
          request: { method: 'POST', url: 'Observation' },
        },
      ],
    }
    const res = await s.fhirFetch('', { method: 'POST', json: bad })
    expect(res.status).toBe(400)
    expect(JSON.stringify(await res.json())).toContain('HAPI-1094')
    expect(await keysUntil(`${s.config.queuePrefix}:transaction-bundle:blob:*:body`, 0)).toEqual([])
  })
})
