// FHIR XML errors and content negotiation over HTTP: OperationOutcomes in XML, hostile XML, Accept and
// _format, media types, and decimal precision through XML. https://hl7.org/fhir/R4/http.html#mime-type
import { beforeAll, describe, expect, test } from 'bun:test'
import { parseFhirXml } from '../shared/fhir/format/xml-parse'
import { readJson, useTestServer } from './harness'
import { errors, expressions, FHIR_NS, FHIR_XML, readXml, unique, XML_CONTENT_TYPE, xmlClient, xmlOutcome } from './xml-http'

const s = useTestServer()

const { sendXml, getXml, rowCounts, createJson } = xmlClient(s)

describe('errors as XML OperationOutcome', () => {
  test('an unknown resource type: 404', async () => {
    const res = await getXml('/Foo')
    expect(res.status).toBe(404)
    expect(errors(await xmlOutcome(res)).length).toBeGreaterThan(0)
    const read = await getXml('/Foo/123')
    expect(read.status).toBe(404)
    await xmlOutcome(read)
  })

  test('an unknown resource type as the XML root element: 400', async () => {
    const before = await rowCounts()
    const res = await sendXml('/Patient', 'POST', `<Foo ${FHIR_NS}><active value="true"/></Foo>`)
    expect(res.status).toBe(400)
    await xmlOutcome(res)
    expect(await rowCounts()).toEqual(before)
  })

  test('an invalid resource: 400 with the element path, nothing written', async () => {
    const before = await rowCounts()
    const bad = await sendXml('/Patient', 'POST', `<Patient ${FHIR_NS}><gender value="banana"/></Patient>`)
    expect(bad.status).toBe(400)
    expect(expressions(await xmlOutcome(bad))).toContain('Patient.gender')

    const unknown = await sendXml('/Patient', 'POST', `<Patient ${FHIR_NS}><name><family value="X"/><nickname value="Y"/></name></Patient>`)
    expect(unknown.status).toBe(400)
    expect(expressions(await xmlOutcome(unknown)).some((e) => e.startsWith('Patient.name') && e.endsWith('nickname'))).toBe(true)

    const twice = await sendXml('/Patient', 'POST', `<Patient ${FHIR_NS}><birthDate value="1970-01-01"/><birthDate value="1971-01-01"/></Patient>`)
    expect(twice.status).toBe(400)
    expect(expressions(await xmlOutcome(twice))).toContain('Patient.birthDate')

    const missing = await sendXml('/Observation', 'POST', `<Observation ${FHIR_NS}><code><text value="x"/></code></Observation>`)
    expect(missing.status).toBe(400)
    expect(expressions(await xmlOutcome(missing)).some((e) => e.startsWith('Observation.status'))).toBe(true)
    expect(await rowCounts()).toEqual(before)
  })

  test('malformed XML: 400 with a structure issue', async () => {
    const before = await rowCounts()
    const res = await sendXml('/Patient', 'POST', `<Patient ${FHIR_NS}><active value="true"></Patient>`)
    expect(res.status).toBe(400)
    const oo = await xmlOutcome(res)
    expect(oo.issue[0].code).toBe('structure')
    expect(await rowCounts()).toEqual(before)
  })

  test('XML outside the FHIR namespace: 400', async () => {
    const none = await sendXml('/Patient', 'POST', '<Patient><active value="true"/></Patient>')
    expect(none.status).toBe(400)
    await xmlOutcome(none)
    const other = await sendXml('/Patient', 'POST', '<Patient xmlns="urn:example:not-fhir"><active value="true"/></Patient>')
    expect(other.status).toBe(400)
    await xmlOutcome(other)
  })

  test('billion laughs: 400 quickly, nothing expanded or written', async () => {
    const before = await rowCounts()
    const levels = Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i};`.repeat(10)}">`).join('')
    const xml = `<?xml version="1.0"?><!DOCTYPE Patient [<!ENTITY lol0 "lol">${levels}]><Patient ${FHIR_NS}><name><family value="&lol9;"/></name></Patient>`
    const start = performance.now()
    const res = await sendXml('/Patient', 'POST', xml)
    const ms = performance.now() - start
    expect(res.status).toBe(400)
    expect((await xmlOutcome(res)).issue[0].code).toBe('security')
    expect(ms).toBeLessThan(1000)
    expect(await rowCounts()).toEqual(before)
  })

  test('a DOCTYPE with an external entity: 400, the file never read', async () => {
    const xml = `<?xml version="1.0"?><!DOCTYPE Patient [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><Patient ${FHIR_NS}><name><family value="&xxe;"/></name></Patient>`
    const res = await sendXml('/Patient', 'POST', xml)
    expect(res.status).toBe(400)
    const oo = await xmlOutcome(res)
    expect(JSON.stringify(oo)).not.toContain('root:')
  })

  test('nesting beyond the depth limit: 400', async () => {
    const depth = 300
    const nested = '<extension url="http://example.org/x">'.repeat(depth) + '<valueString value="deep"/>' + '</extension>'.repeat(depth)
    const res = await sendXml('/Patient', 'POST', `<Patient ${FHIR_NS}>${nested}</Patient>`)
    expect(res.status).toBe(400)
    expect((await xmlOutcome(res)).issue[0].code).toBe('structure')
  })

  test('an unknown id with _format=xml: 404 in XML', async () => {
    const res = await s.fhirFetch('/Patient/not-there-xml?_format=xml')
    expect(res.status).toBe(404)
    expect((await xmlOutcome(res)).issue[0].code).toBe('processing') // HAPI: ResourceNotFoundException
  })
})

describe('content negotiation', () => {
  let id: string

  beforeAll(async () => {
    id = (await createJson({ resourceType: 'Patient', active: true })).id
  })

  /** The format of the response to GET /Patient/{id} with these query parameters and Accept. */
  async function formatOf(query: string, accept?: string): Promise<'json' | 'xml'> {
    const res = await s.fhirFetch(`/Patient/${id}${query}`, { headers: accept ? { accept } : {} })
    expect(res.status).toBe(200)
    const type = res.headers.get('content-type') ?? ''
    const text = await res.text()
    if (type === XML_CONTENT_TYPE) {
      expect(parseFhirXml(text).id).toBe(id)
      return 'xml'
    }
    expect(type).toBe('application/fhir+json;charset=utf-8')
    expect(JSON.parse(text).id).toBe(id)
    return 'json'
  }

  test('JSON by default, and for */*', async () => {
    expect(await formatOf('')).toBe('json')
    expect(await formatOf('', '*/*')).toBe('json')
  })

  test('Accept q-values: the highest wins', async () => {
    expect(await formatOf('', 'application/fhir+json;q=0.5, application/fhir+xml;q=0.9')).toBe('xml')
    expect(await formatOf('', 'application/fhir+xml;q=0.2, application/fhir+json')).toBe('json')
    expect(await formatOf('', 'text/html;q=0.5, application/fhir+xml;q=0.8, */*;q=0.1')).toBe('xml')
  })

  test('Accept aliases: application/xml and text/xml give FHIR XML', async () => {
    expect(await formatOf('', 'application/xml')).toBe('xml')
    expect(await formatOf('', 'text/xml')).toBe('xml')
    expect(await formatOf('', 'application/fhir+xml; charset=utf-8')).toBe('xml')
  })

  test('_format: xml, the MIME types and their aliases', async () => {
    expect(await formatOf('?_format=xml')).toBe('xml')
    expect(await formatOf(`?_format=${encodeURIComponent('application/fhir+xml')}`)).toBe('xml')
    expect(await formatOf('?_format=application/xml')).toBe('xml')
    expect(await formatOf('?_format=text/xml')).toBe('xml')
    expect(await formatOf(`?_format=${encodeURIComponent('application/fhir+json')}`)).toBe('json')
  })

  test('_format overrides Accept both ways', async () => {
    expect(await formatOf('?_format=json', FHIR_XML)).toBe('json')
    expect(await formatOf('?_format=xml', 'application/fhir+json')).toBe('xml')
  })

  test('request bodies by Content-Type: application/xml, text/xml and a charset parameter', async () => {
    for (const type of ['application/xml', 'text/xml', 'application/fhir+xml; charset=UTF-8']) {
      const res = await s.fhirFetch('/Patient', {
        method: 'POST',
        body: `<Patient ${FHIR_NS}><gender value="other"/></Patient>`,
        headers: { 'content-type': type },
      })
      expect(res.status).toBe(201)
      expect((await readJson(res)).gender).toBe('other')
    }
  })

  test('an XML body with a JSON response, and a JSON body with an XML response', async () => {
    const xmlIn = await s.fhirFetch('/Patient', {
      method: 'POST',
      body: `<Patient ${FHIR_NS}><active value="false"/></Patient>`,
      headers: { 'content-type': FHIR_XML, accept: 'application/fhir+json' },
    })
    expect(xmlIn.status).toBe(201)
    expect((await readJson(xmlIn)).active).toBe(false)
    const jsonIn = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: false }, headers: { accept: FHIR_XML } })
    expect(jsonIn.status).toBe(201)
    expect((await readXml(jsonIn)).active).toBe(false)
  })

  test('an XML body labelled application/fhir+json: 400', async () => {
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      body: `<Patient ${FHIR_NS}><active value="true"/></Patient>`,
      headers: { 'content-type': 'application/fhir+json', accept: FHIR_XML },
    })
    expect(res.status).toBe(400)
    await xmlOutcome(res)
  })

  test('an unsupported Content-Type: 400 HAPI-0449 as an XML OperationOutcome, nothing written', async () => {
    const before = await rowCounts()
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      body: `<Patient ${FHIR_NS}/>`,
      headers: { 'content-type': 'text/plain', accept: FHIR_XML },
    })
    expect(res.status).toBe(400)
    await xmlOutcome(res)
    expect(await rowCounts()).toEqual(before)
  })

  test('Accept: image/png: the default encoding, JSON (HAPI never answers 406)', async () => {
    const res = await s.fhirFetch(`/Patient/${id}`, { headers: { accept: 'image/png' } })
    expect(res.status).toBe(200)
    expect((await readJson(res)).resourceType).toBe('Patient')
  })

  test('_pretty=true XML is indented and parses to the same resource', async () => {
    const compact = await (await s.fhirFetch(`/Patient/${id}?_format=xml`)).text()
    const pretty = await (await s.fhirFetch(`/Patient/${id}?_format=xml&_pretty=true`)).text()
    expect(pretty).toContain('\n  <')
    expect(parseFhirXml(pretty)).toEqual(parseFhirXml(compact))
  })
})

describe('decimal precision through XML', () => {
  test('an Observation created in XML with <value value="72.50"/> reads back as 72.50 in JSON and XML', async () => {
    const xml = `<Observation ${FHIR_NS}>
  <status value="final"/>
  <code><text value="weight"/></code>
  <valueQuantity><value value="72.50"/><unit value="kg"/><system value="http://unitsofmeasure.org"/><code value="kg"/></valueQuantity>
  <component><code><text value="tiny"/></code><valueQuantity><value value="0.000100"/></valueQuantity></component>
</Observation>`
    const res = await sendXml('/Observation', 'POST', xml)
    expect(res.status).toBe(201)
    const id = (await readXml(res)).id
    const json = await (await s.fhirFetch(`/Observation/${id}`)).text()
    expect(json).toContain('"value":72.50')
    expect(json).toContain('"value":0.000100')
    const back = await (await getXml(`/Observation/${id}`)).text()
    expect(back).toContain('<value value="72.50"/>')
    expect(back).toContain('<value value="0.000100"/>')
  })

  test('search matches the precision written in XML: 72.50 matches 72.50, not 72.54', async () => {
    const code = unique('xmldec')
    const res = await sendXml(
      '/Observation',
      'POST',
      `<Observation ${FHIR_NS}><status value="final"/><code><coding><system value="http://example.org/xml-test"/><code value="${code}"/></coding></code><valueQuantity><value value="72.50"/></valueQuantity></Observation>`,
    )
    expect(res.status).toBe(201)
    const hit = await readXml(await s.fhirFetch(`/Observation?code=${code}&value-quantity=72.50&_format=xml`))
    expect(hit.total).toBe(1)
    const miss = await readXml(await s.fhirFetch(`/Observation?code=${code}&value-quantity=72.54&_format=xml`))
    expect(miss.total).toBe(0)
  })
})
