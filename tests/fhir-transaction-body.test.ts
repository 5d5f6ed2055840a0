// The body of POST [base] as received: a synchronous JSON Bundle goes to the worker unread (it parses and
// checks it, and its error is the answer); an asynchronous one is checked by the API node first, so a bad
// Bundle is refused at once, not at its status URL. XML is read on the API node.
import { describe, expect, test } from 'bun:test'
import { post, patient, rows, transaction, unique, uuid } from './bundle-http'
import { readJson, useTestServer } from './harness'

const s = useTestServer({ MAX_BUNDLE_ENTRIES: '3' })

async function send(body: string, headers: Record<string, string> = {}): Promise<Response> {
  return s.fhirFetch('', { method: 'POST', body, headers: { 'content-type': 'application/fhir+json', ...headers } })
}

/** The request must fail with `status`, an OperationOutcome holding `text`, and nothing written. */
async function refused(body: string, headers: Record<string, string>, status: number, text: string): Promise<void> {
  const before = await rows(s)
  const res = await send(body, headers)
  const outcome = await readJson(res)
  expect({ status: res.status, type: outcome.resourceType }).toEqual({ status, type: 'OperationOutcome' })
  expect(JSON.stringify(outcome)).toContain(text)
  expect(await rows(s)).toEqual(before)
}

const ASYNC = { prefer: 'respond-async' }

describe('POST [base] body', () => {
  const truncated = JSON.stringify(transaction([post(patient(unique('body-trunc')), uuid())])).slice(0, -5)

  // HAPI (ResourceParameter): HAPI-0450 wrapping the parser's HAPI-1861.
  test('text that is not JSON: 400 HAPI-0450, synchronous (from the worker) and asynchronous (at once)', async () => {
    await refused(truncated, {}, 400, 'HAPI-0450: Failed to parse request body as JSON resource. Error was: HAPI-1861: ')
    await refused(truncated, ASYNC, 400, 'HAPI-0450: Failed to parse request body as JSON resource. Error was: HAPI-1861: ')
  })

  test('an empty body: 400, both ways', async () => {
    await refused('', {}, 400, 'HAPI-0339')
    await refused('', ASYNC, 400, 'HAPI-0339')
  })

  test('not a Bundle, or over MAX_BUNDLE_ENTRIES: 400 and 413 at once when asynchronous (never a 202)', async () => {
    await refused(JSON.stringify(patient(unique('body-notbundle'))), ASYNC, 400, 'HAPI-0339')
    const over = transaction(Array.from({ length: 4 }, (_, i) => post(patient(unique(`body-over-${i}`)), uuid())))
    await refused(JSON.stringify(over), ASYNC, 413, 'HAPI-0528')
    await refused(JSON.stringify(over), {}, 413, 'HAPI-0528')
  })

  test('a Content-Type that is not FHIR: 400 HAPI-0449 (HAPI: ResourceParameter)', async () => {
    await refused(JSON.stringify(transaction([post(patient(unique('body-ct')), uuid())])), { 'content-type': 'text/plain' }, 400, 'HAPI-0449')
  })

  test('decimals of the forwarded text are stored as written', async () => {
    const obs = { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, valueQuantity: { value: 1.5, unit: 'kg' } }
    const text = JSON.stringify(transaction([post(obs, uuid())])).replace('"value":1.5', '"value":1.50')
    const res = await send(text)
    const body = await readJson(res)
    expect(res.status).toBe(200)
    const read = await s.fhirFetch(`/${body.entry[0].response.location.split('/_history/')[0]}`)
    expect(await read.text()).toContain('"value":1.50')
  })

  test('text beyond ASCII travels as the bytes received and is stored as written', async () => {
    const family = `Müller-Łukasiewicz-日本-${unique('utf8')}`
    const res = await send(JSON.stringify(transaction([post({ resourceType: 'Patient', name: [{ family }] }, uuid())])))
    const body = await readJson(res)
    expect(res.status).toBe(200)
    const read = await readJson(await s.fhirFetch(`/${body.entry[0].response.location.split('/_history/')[0]}`))
    expect(read.name[0].family).toBe(family)
    const asyncRes = await send(JSON.stringify(transaction([post({ resourceType: 'Patient', name: [{ family: `${family}-async` }] }, uuid())])), ASYNC)
    expect(asyncRes.status).toBe(202)
    await asyncRes.arrayBuffer()
  })

  test('an XML Bundle is read on the API node and processed', async () => {
    const family = unique('Xmlbody').replace(/[^A-Za-z]/g, '')
    const xml = `<Bundle xmlns="http://hl7.org/fhir"><type value="transaction"/><entry><fullUrl value="${uuid()}"/><resource><Patient><name><family value="${family}"/></name></Patient></resource><request><method value="POST"/><url value="Patient"/></request></entry></Bundle>`
    const res = await send(xml, { 'content-type': 'application/fhir+xml' })
    const body = await readJson(res)
    expect({ status: res.status, type: body.type, entry: body.entry[0].response.status }).toEqual({
      status: 200,
      type: 'transaction-response',
      entry: '201 Created',
    })
    expect(((await readJson(await s.fhirFetch(`/Patient?family=${family}`))) as any).total).toBe(1)
  })
})
