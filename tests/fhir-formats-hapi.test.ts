// Content negotiation as lenient as HAPI's (EncodingEnum.forContentType, RestfulServerUtils.
// determineResponseEncodingNoDefault), the HTML page a browser gets (ResponseHighlighterInterceptor, which
// the starter registers), escaped throughout, and HAPI's codes for request bodies (ResourceParameter).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readJson, startTestServer, type TestServer } from './harness'

let s: TestServer
let patient: any
const HOSTILE = `</pre><script>alert("x")</script><img src=x onerror='alert(1)'>&amp;`

beforeAll(async () => {
  s = await startTestServer()
  const res = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true, name: [{ family: HOSTILE }] } })
  expect(res.status).toBe(201)
  patient = await readJson(res)
}, 120_000)

afterAll(async () => {
  await s.stop()
}, 120_000)

async function encodingOf(query: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await s.fhirFetch(`/Patient/${patient.id}${query}`, { headers })
  expect(res.status).toBe(200)
  const type = res.headers.get('content-type') ?? ''
  await res.arrayBuffer()
  return type.includes('xml') ? 'xml' : type.includes('json') ? 'json' : type
}

describe('_format and Accept as HAPI reads them', () => {
  test('the lenient names: json, xml, the legacy +fhir types, text/json, text/xml', async () => {
    for (const [value, expected] of [
      ['json', 'json'],
      ['xml', 'xml'],
      ['application/json+fhir', 'json'],
      ['application/xml+fhir', 'xml'],
      ['text/json', 'json'],
      ['text/xml', 'xml'],
      ['application/fhir+xml;charset=utf-8', 'xml'],
    ]) {
      expect(await encodingOf(`?_format=${encodeURIComponent(value)}`)).toBe(expected)
      expect(await encodingOf('', { accept: value === 'json' || value === 'xml' ? `application/fhir+${value}` : value })).toBe(expected)
    }
  })

  test('a + left unescaped in _format is read as a space and still understood (hapi-fhir #346)', async () => {
    expect(await encodingOf('?_format=application/fhir+xml')).toBe('xml')
    expect(await encodingOf('?_format=application/xml+fhir')).toBe('xml')
    expect(await encodingOf('?_format=application/fhir+json', { accept: 'application/fhir+xml' })).toBe('json')
  })

  test('an unknown _format: the Accept header, else the default encoding, never 406', async () => {
    expect(await encodingOf('?_format=banana')).toBe('json')
    expect(await encodingOf('?_format=banana', { accept: 'application/fhir+xml' })).toBe('xml')
  })
})

describe('a browser (Accept: text/html) gets a readable HTML page', () => {
  const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }

  test('a read: the resource pretty-printed in an HTML page, everything escaped, no script allowed', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}`, { headers: browser })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html;charset=utf-8')
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'")
    const page = await res.text()
    expect(page).toStartWith('<!DOCTYPE html>')
    expect(page).toContain('HTTP 200 OK')
    expect(page).toContain('&quot;resourceType&quot;: &quot;Patient&quot;')
    expect(page).toContain('&lt;/pre&gt;&lt;script&gt;alert(\\&quot;x\\&quot;)&lt;/script&gt;')
    expect(page).toContain('&amp;amp;')
    expect(page).not.toContain('<script')
    expect(page).not.toContain('<img')
    expect(page).toContain(`href="/fhir/Patient/${patient.id}?_format=json"`)
  })

  test('a search Bundle, and an error with its status', async () => {
    const bundle = await s.fhirFetch(`/Patient?_id=${patient.id}`, { headers: browser })
    expect(bundle.status).toBe(200)
    const page = await bundle.text()
    expect(page).toContain('&quot;resourceType&quot;: &quot;Bundle&quot;')
    expect(page).not.toContain('<script')
    const missing = await s.fhirFetch('/Patient/not-there-at-all', { headers: browser })
    expect(missing.status).toBe(404)
    expect(missing.headers.get('content-type')).toBe('text/html;charset=utf-8')
    expect(await missing.text()).toContain('HTTP 404 Not Found')
  })

  test('request parameters are escaped in the links', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}?x=${encodeURIComponent('"><script>alert(1)</script>')}`, { headers: browser })
    const page = await res.text()
    expect(page).not.toContain('<script')
    expect(page).not.toContain('"><script')
  })

  test('_format=html asks for the page, html/xml shows XML; another _format, AJAX or a POST do not', async () => {
    const forced = await s.fhirFetch(`/Patient/${patient.id}?_format=html`)
    expect(forced.headers.get('content-type')).toBe('text/html;charset=utf-8')
    await forced.arrayBuffer()
    const xml = await s.fhirFetch(`/Patient/${patient.id}?_format=html/xml`)
    expect(await xml.text()).toContain('&lt;Patient xmlns=&quot;http://hl7.org/fhir&quot;&gt;')
    expect(await encodingOf('?_format=json', browser)).toBe('json')
    expect(await encodingOf('', { ...browser, 'x-requested-with': 'XMLHttpRequest' })).toBe('xml') // application/xml;q=0.9
    const post = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient' }, headers: browser })
    expect(post.status).toBe(201)
    expect(post.headers.get('content-type')).not.toContain('html')
    await post.arrayBuffer()
  })
})

describe('request bodies (HAPI: ResourceParameter)', () => {
  test('a form-encoded body where a resource is expected: 400 HAPI-0446', async () => {
    const res = await s.fhirFetch('/Patient', { method: 'POST', body: 'a=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(res.status).toBe(400)
    expect((await readJson(res)).issue[0].diagnostics).toStartWith('HAPI-0446: ')
  })

  test('a body labelled text/json is read as JSON', async () => {
    const res = await s.fhirFetch('/Patient', { method: 'POST', body: JSON.stringify({ resourceType: 'Patient' }), headers: { 'content-type': 'text/json' } })
    expect(res.status).toBe(201)
    await res.arrayBuffer()
  })
})
