// Issue 19, bad input: each is a 400 with an OperationOutcome (the envelope on the patient API), never a
// 500 from PostgreSQL or a stack overflow, and never stored in a form other than the one sent.
import { describe, expect, test } from 'bun:test'
import { Queue } from 'bullmq'
import { readJson, useTestServer } from './harness'
import { call, createOrg } from './patients-client'

const s = useTestServer()

async function expect400(res: Response, text?: string): Promise<void> {
  expect(res.status).toBe(400)
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  if (text) expect(body.issue.map((i: any) => i.diagnostics).join('\n')).toContain(text)
}

const post = (path: string, body: string | Uint8Array, contentType = 'application/fhir+json') =>
  s.fhirFetch(path, { method: 'POST', body, headers: { 'content-type': contentType } })

async function patients(): Promise<number> {
  const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource where res_type = 'Patient'`
  return n
}

describe('NUL characters', () => {
  test('in a search parameter and in a path: 400', async () => {
    await expect400(await s.fhirFetch('/Patient?name=%00'))
    await expect400(await s.fhirFetch('/Patient/%00'))
    await expect400(await s.fhirFetch('/Patient?identifier=a%00b'))
  })

  test('inside a JSON string, of a resource and of a Bundle entry: 400, nothing written', async () => {
    const before = await patients()
    await expect400(await post('/Patient', '{"resourceType":"Patient","name":[{"family":"a\\u0000b"}]}'), 'NUL')
    const bundle = `{"resourceType":"Bundle","type":"transaction","entry":[{"resource":{"resourceType":"Patient","name":[{"family":"\\u0000"}]},"request":{"method":"POST","url":"Patient"}}]}`
    await expect400(await post('', bundle), 'NUL')
    expect(await patients()).toBe(before)
    // An escaped backslash before u0000 is text, not a NUL.
    expect((await post('/Patient', '{"resourceType":"Patient","name":[{"family":"a\\\\u0000b"}]}')).status).toBe(201)
  })

  test('on the patient API: 400 with the envelope', async () => {
    const org = await createOrg(s)
    const res = await call(s, org, '/patients/%00')
    expect(res.status).toBe(400)
    const body = await readJson(res)
    expect(body.error.type).toBe('invalid_request_error')
  })
})

test('a JSON Patch value nested 100,000 deep: 400', async () => {
  const created = await readJson(await post('/Patient', '{"resourceType":"Patient","active":true}'))
  const deep = `[{"op":"add","path":"/extension","value":${'['.repeat(100_000)}${']'.repeat(100_000)}}]`
  const res = await s.fhirFetch(`/Patient/${created.id}`, { method: 'PATCH', body: deep, headers: { 'content-type': 'application/json-patch+json' } })
  await expect400(res)
})

test('a resource with 200,000 identifiers: 400 (its index text is beyond PostgreSQL limits)', async () => {
  const identifier = Array.from({ length: 200_000 }, (_, i) => ({ system: 'http://example.org/many', value: `v-${i}` }))
  await expect400(await post('/Patient', JSON.stringify({ resourceType: 'Patient', identifier })))
})

test('the same id PUT twice in one transaction: 400 HAPI-0535, nothing written', async () => {
  const before = await patients()
  const entry = [1, 2].map((n) => ({
    resource: { resourceType: 'Patient', id: 'twice', gender: n === 1 ? 'male' : 'female' },
    request: { method: 'PUT', url: 'Patient/twice' },
  }))
  await expect400(await post('', JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry })), 'HAPI-0535')
  expect(await patients()).toBe(before)
})

test('a body that is not UTF-8: 400, for a resource and for a Bundle', async () => {
  const bytes = (text: string) => {
    const b = new TextEncoder().encode(text)
    const at = b.indexOf(0x58) // the X stands for a byte no UTF-8 text holds
    b[at] = 0xff
    return b
  }
  await expect400(await post('/Patient', bytes('{"resourceType":"Patient","name":[{"family":"X"}]}')), 'UTF-8')
  const bundle =
    '{"resourceType":"Bundle","type":"batch","entry":[{"resource":{"resourceType":"Patient","name":[{"family":"X"}]},"request":{"method":"POST","url":"Patient"}}]}'
  await expect400(await post('', bytes(bundle)), 'UTF-8')
})

test('a duplicate JSON key: 400, for a resource and inside a Bundle', async () => {
  await expect400(await post('/Patient', '{"resourceType":"Patient","gender":"male","gender":"female"}'), 'gender')
  const bundle =
    '{"resourceType":"Bundle","type":"batch","entry":[{"resource":{"resourceType":"Patient","active":true,"active":false},"request":{"method":"POST","url":"Patient"}}]}'
  await expect400(await post('', bundle), 'active')
  // A `":` inside a string value is not a key.
  expect((await post('/Patient', '{"resourceType":"Patient","name":[{"family":"a\\":b"}]}')).status).toBe(201)
})

test('a Bundle whose entry is an object: 400', async () => {
  const bundle = { resourceType: 'Bundle', type: 'batch', entry: { request: { method: 'POST', url: 'Patient' }, resource: { resourceType: 'Patient' } } }
  await expect400(await post('', JSON.stringify(bundle)), 'entry')
})

test('active content in a narrative (txt-1): 400', async () => {
  const div = (inner: string) =>
    JSON.stringify({ resourceType: 'Patient', text: { status: 'generated', div: `<div xmlns="http://www.w3.org/1999/xhtml">${inner}</div>` } })
  await expect400(await post('/Patient', div('<script>alert(1)</script>')), 'script')
  await expect400(await post('/Patient', div('<p onclick="alert(1)">x</p>')), 'onclick')
  await expect400(await post('/Patient', div('<a href="javascript:alert(1)">x</a>')), 'javascript')
  expect((await post('/Patient', div('<p>A <b>plain</b> narrative, <a href="http://example.org">linked</a></p>'))).status).toBe(201)
})

test('a transaction failing with 4xx (a missing reference, a NUL) is attempted once, not retried', async () => {
  const queue = new Queue('transaction-bundle', { connection: { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' }, prefix: s.config.queuePrefix })
  const observation = (subject: string, text: string) => ({
    resourceType: 'Bundle',
    type: 'transaction',
    entry: [
      {
        resource: { resourceType: 'Observation', status: 'final', code: { text }, subject: { reference: subject } },
        request: { method: 'POST', url: 'Observation' },
      },
    ],
  })
  try {
    for (const [bundle, mark] of [
      [observation('Patient/missing-one', 'x'), 'missing-one'],
      [observation('Patient/nul-one', 'a\u0000'), 'NUL'],
    ] as const) {
      const res = await post('', JSON.stringify(bundle))
      expect(res.status).toBe(400)
      await res.arrayBuffer()
      const job = (await queue.getFailed()).find((j) => String(j.failedReason).includes(mark))
      expect(job?.attemptsMade).toBe(1)
    }
  } finally {
    await queue.close()
  }
})
