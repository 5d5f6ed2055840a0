// Content negotiation and formats: _format over Accept, FHIR JSON and XML, media-type errors.
// https://hl7.org/fhir/R4/http.html#mime-type  https://hl7.org/fhir/R4/xml.html
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type TestServer, readJson, startTestServer } from './harness'

let s: TestServer
let patient: any

beforeAll(async () => {
  s = await startTestServer()
  const res = await s.fhirFetch('/Patient', {
    method: 'POST',
    json: { resourceType: 'Patient', active: true, name: [{ family: 'Format', given: ['Xml'] }], gender: 'female', birthDate: '1985-06-07' },
  })
  expect(res.status).toBe(201)
  patient = await readJson(res)
}, 120_000)

afterAll(async () => {
  await s.stop()
}, 120_000)

async function rowCount(): Promise<number> {
  const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource`
  return n
}

describe('JSON', () => {
  test('responses are application/fhir+json;charset=utf-8', async () => {
    const read = await s.fhirFetch(`/Patient/${patient.id}`)
    expect(read.headers.get('content-type')).toBe('application/fhir+json;charset=utf-8')
    const error = await s.fhirFetch('/Patient/nope')
    expect(error.headers.get('content-type')).toBe('application/fhir+json;charset=utf-8')
    const created = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient' } })
    expect(created.headers.get('content-type')).toBe('application/fhir+json;charset=utf-8')
  })

  test('_format=json overrides Accept: application/fhir+xml', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}?_format=json`, { headers: { accept: 'application/fhir+xml' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('application/fhir+json')
    expect((await readJson(res)).id).toBe(patient.id)
  })

  test('a body sent as application/json is accepted', async () => {
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      body: JSON.stringify({ resourceType: 'Patient', active: false }),
      headers: { 'content-type': 'application/json' },
    })
    expect(res.status).toBe(201)
  })
})

describe('media-type errors', () => {
  // HAPI: ResourceParameter.loadResourceFromRequest.
  test('an unsupported Content-Type (text/plain): 400 HAPI-0449 with an OperationOutcome, nothing written', async () => {
    const before = await rowCount()
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      body: JSON.stringify({ resourceType: 'Patient' }),
      headers: { 'content-type': 'text/plain' },
    })
    expect(res.status).toBe(400)
    const oo = await readJson(res)
    expect(oo.issue[0].diagnostics).toStartWith('HAPI-0449: ')
    expect(await rowCount()).toBe(before)
  })

  // HAPI: RestfulServerUtils.determineResponseEncodingNoDefault finds none, the server's default applies.
  test('Accept: image/png: the default encoding (JSON), not 406', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}`, { headers: { accept: 'image/png' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('application/fhir+json')
  })
})

describe('XML', () => {
  test('_format=xml read returns FHIR XML as application/fhir+xml', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}?_format=xml`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/fhir+xml;charset=utf-8')
    const xml = await res.text()
    expect(xml).toMatch(/<Patient xmlns="http:\/\/hl7\.org\/fhir">/)
    expect(xml).toContain(`<id value="${patient.id}"/>`)
    expect(xml).toContain('<versionId value="1"/>')
    expect(xml).toContain('<family value="Format"/>')
    expect(xml).toContain('<birthDate value="1985-06-07"/>')
  })

  test('Accept: application/fhir+xml returns XML', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}`, { headers: { accept: 'application/fhir+xml' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('application/fhir+xml')
    expect(await res.text()).toContain('<Patient xmlns="http://hl7.org/fhir">')
  })

  test('an XML create (application/fhir+xml) reads back as the same resource in JSON', async () => {
    const xml = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<Patient xmlns="http://hl7.org/fhir">',
      '  <active value="true"/>',
      '  <name><family value="Mueller"/><given value="Anna"/><given value="Maria"/></name>',
      '  <gender value="female"/>',
      '  <birthDate value="1977-07-17"/>',
      '</Patient>',
    ].join('\n')
    const res = await s.fhirFetch('/Patient', { method: 'POST', body: xml, headers: { 'content-type': 'application/fhir+xml' } })
    expect(res.status).toBe(201)
    const id = (res.headers.get('location') as string).split('/').at(-3)
    const read = await s.fhirFetch(`/Patient/${id}`)
    expect(read.status).toBe(200)
    const json = await readJson(read)
    const { meta, ...rest } = json
    expect(rest).toEqual({
      resourceType: 'Patient',
      id,
      active: true,
      name: [{ family: 'Mueller', given: ['Anna', 'Maria'] }],
      gender: 'female',
      birthDate: '1977-07-17',
    })
    expect(meta.versionId).toBe('1')
  })

  test('errors come back as an XML OperationOutcome when Accept asks for XML', async () => {
    const res = await s.fhirFetch('/Patient/not-there', { headers: { accept: 'application/fhir+xml' } })
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toStartWith('application/fhir+xml')
    const xml = await res.text()
    expect(xml).toContain('<OperationOutcome xmlns="http://hl7.org/fhir">')
    expect(xml).toContain('HAPI-2001')
  })

  test('a validation error on an XML write comes back as XML', async () => {
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      body: '<Patient xmlns="http://hl7.org/fhir"><gender value="banana"/></Patient>',
      headers: { 'content-type': 'application/fhir+xml', accept: 'application/fhir+xml' },
    })
    expect(res.status).toBe(400)
    expect(await res.text()).toContain('<OperationOutcome xmlns="http://hl7.org/fhir">')
  })

  test('malformed XML: 400', async () => {
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      body: '<Patient xmlns="http://hl7.org/fhir"><active value="true"></Patient>',
      headers: { 'content-type': 'application/fhir+xml' },
    })
    expect(res.status).toBe(400)
    expect((await readJson(res)).resourceType).toBe('OperationOutcome')
  })

  test('a malformed JSON body (not XML): 400 HAPI-0450 (ResourceParameter) wrapping HAPI-1861 (the parser)', async () => {
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      body: '{"resourceType": "Patient", "active": tru',
      headers: { 'content-type': 'application/fhir+json' },
    })
    expect(res.status).toBe(400)
    expect((await readJson(res)).issue[0].diagnostics).toStartWith('HAPI-0450: Failed to parse request body as JSON resource. Error was: HAPI-1861: ')
  })
})

describe('malformed URLs', () => {
  test('bad percent-encoding in the path is a 400 OperationOutcome', async () => {
    const res = await s.fhirFetch('/Patient/%E0%A4%A')
    expect(res.status).toBe(400)
    expect((await readJson(res)).resourceType).toBe('OperationOutcome')
  })
})

describe('decimal precision', () => {
  const obs = (v: string) => `{"resourceType":"Observation","status":"final","code":{"text":"weight"},"valueQuantity":{"value":${v},"unit":"kg"}}`

  test('a decimal keeps its precision as written in JSON and XML, and an unchanged PUT writes no version', async () => {
    const created = await s.fhirFetch('/Observation', { method: 'POST', body: obs('72.50'), headers: { 'content-type': 'application/fhir+json' } })
    expect(created.status).toBe(201)
    const id = ((await readJson(created)) as any).id
    const text = await (await s.fhirFetch(`/Observation/${id}`)).text()
    expect(text).toContain('"value":72.50')
    const xml = await (await s.fhirFetch(`/Observation/${id}?_format=xml`)).text()
    expect(xml).toContain('<value value="72.50"/>')
    const put = await s.fhirFetch(`/Observation/${id}`, {
      method: 'PUT',
      body: obs('72.50').replace('{', `{"id":"${id}",`),
      headers: { 'content-type': 'application/fhir+json' },
    })
    expect(put.status).toBe(200)
    expect(put.headers.get('etag')).toBe('W/"1"')
    const changed = await s.fhirFetch(`/Observation/${id}`, {
      method: 'PUT',
      body: obs('72.5').replace('{', `{"id":"${id}",`),
      headers: { 'content-type': 'application/fhir+json' },
    })
    expect(changed.headers.get('etag')).toBe('W/"2"')
  })

  test('a decimal keeps its precision through a transaction processed by a worker', async () => {
    const bundle = `{"resourceType":"Bundle","type":"transaction","entry":[{"resource":${obs('61.20')},"request":{"method":"POST","url":"Observation"}}]}`
    const res = await s.fhirFetch('', { method: 'POST', body: bundle, headers: { 'content-type': 'application/fhir+json' } })
    expect(res.status).toBe(200)
    const location = ((await readJson(res)) as any).entry[0].response.location as string
    const text = await (await s.fhirFetch(`/${location.split('/_history')[0]}`)).text()
    expect(text).toContain('"value":61.20')
  })

  test('search uses the precision as written: 72.50 matches 72.50 but not 72.54', async () => {
    await s.fhirFetch('/Observation', { method: 'POST', body: obs('80.10'), headers: { 'content-type': 'application/fhir+json' } })
    const hit = (await readJson(await s.fhirFetch('/Observation?value-quantity=80.10'))) as any
    expect(hit.total).toBeGreaterThanOrEqual(1)
    const miss = (await readJson(await s.fhirFetch('/Observation?value-quantity=80.14'))) as any
    expect(miss.total).toBe(0)
  })
})
