// FHIR XML over HTTP through the real app: create and read, search, transaction and batch Bundles,
// FHIR Patch, $validate, history, errors as XML OperationOutcomes, content negotiation and decimals.
// https://hl7.org/fhir/R4/xml.html  https://hl7.org/fhir/R4/http.html#mime-type
import { beforeAll, describe, expect, test } from 'bun:test'
import { parseFhirXml } from '../shared/fhir/format/xml-parse'
import { toFhirXml } from '../shared/fhir/format/xml-write'
import { readJson, useTestServer } from './harness'

const s = useTestServer()

const FHIR_XML = 'application/fhir+xml'
const XML_CONTENT_TYPE = 'application/fhir+xml;charset=utf-8'
const FHIR_NS = 'xmlns="http://hl7.org/fhir"'
const XHTML_NS = 'xmlns="http://www.w3.org/1999/xhtml"'

let seq = 0
/** A value no other test uses (names, identifiers). */
const unique = (label: string) => `${label}${Date.now().toString(36)}${++seq}`
const uuid = () => `urn:uuid:${crypto.randomUUID()}`

/** Sends `body` (FHIR XML text, or a JSON resource written as FHIR XML) and asks for XML back. */
function sendXml(path: string, method: string, body: string | object, headers: Record<string, string> = {}): Promise<Response> {
  return s.fhirFetch(path, {
    method,
    body: typeof body === 'string' ? body : toFhirXml(body),
    headers: { 'content-type': FHIR_XML, accept: FHIR_XML, ...headers },
  })
}

/** GET with Accept: application/fhir+xml. */
const getXml = (path: string, headers: Record<string, string> = {}) => s.fhirFetch(path, { headers: { accept: FHIR_XML, ...headers } })

/** The body of a FHIR XML response, parsed; checks the Content-Type and the root namespace. */
async function readXml(res: Response): Promise<any> {
  expect(res.headers.get('content-type')).toBe(XML_CONTENT_TYPE)
  const text = await res.text()
  expect(text).toStartWith('<?xml')
  expect(text).toContain(FHIR_NS)
  return parseFhirXml(text)
}

/** An XML OperationOutcome with at least one issue. */
async function xmlOutcome(res: Response): Promise<any> {
  const oo = await readXml(res)
  expect(oo.resourceType).toBe('OperationOutcome')
  expect(oo.issue.length).toBeGreaterThan(0)
  return oo
}

const expressions = (oo: any): string[] => oo.issue.flatMap((i: any) => i.expression ?? [])
const errors = (oo: any) => oo.issue.filter((i: any) => i.severity === 'error' || i.severity === 'fatal')
/** `Type/id` of a `.../Type/id/_history/n` location. */
const target = (location: string) => location.replace(/^.*\/fhir\//, '').split('/_history/')[0]

async function rowCounts(): Promise<{ current: number; history: number }> {
  const [row] = await s.sql<{ current: number; history: number }[]>`
    select (select count(*)::int from resource) as current, (select count(*)::int from resource_history) as history`
  return row
}

/** Creates a resource through the JSON surface; the stored resource. */
async function createJson(resource: any): Promise<any> {
  const res = await s.fhirFetch(`/${resource.resourceType}`, { method: 'POST', json: resource })
  expect(res.status).toBe(201)
  return readJson(res)
}

describe('create and read in XML', () => {
  test('an XML create with narrative, a primitive extension and a contained resource; read back in JSON and XML', async () => {
    const family = unique('Xmlcreate')
    const xml = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      `<Patient ${FHIR_NS}>`,
      `  <text><status value="generated"/><div ${XHTML_NS}><p>Anna <b>${family}</b></p></div></text>`,
      '  <contained><Organization><id value="org1"/><name value="Clinic"/></Organization></contained>',
      '  <!-- comments are ignored -->',
      '  <active value="true"/>',
      `  <name><family value="${family}"/><given value="Anna"/><given value="Maria"/></name>`,
      '  <birthDate value="1970-03-30">',
      '    <extension url="http://hl7.org/fhir/StructureDefinition/patient-birthTime"><valueDateTime value="1970-03-30T14:35:45-05:00"/></extension>',
      '  </birthDate>',
      '  <managingOrganization><reference value="#org1"/></managingOrganization>',
      '</Patient>',
    ].join('\n')
    const res = await sendXml('/Patient', 'POST', xml)
    expect(res.status).toBe(201)
    expect(res.headers.get('location')).toMatch(/\/fhir\/Patient\/[A-Za-z0-9\-.]+\/_history\/1$/)
    const created = await readXml(res)
    expect(created.resourceType).toBe('Patient')
    const id = created.id
    expect(created.meta.versionId).toBe('1')

    const json = await readJson(await s.fhirFetch(`/Patient/${id}`))
    const { meta, text, ...rest } = json
    expect(rest).toEqual({
      resourceType: 'Patient',
      id,
      contained: [{ resourceType: 'Organization', id: 'org1', name: 'Clinic' }],
      active: true,
      name: [{ family, given: ['Anna', 'Maria'] }],
      birthDate: '1970-03-30',
      _birthDate: {
        extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/patient-birthTime', valueDateTime: '1970-03-30T14:35:45-05:00' }],
      },
      managingOrganization: { reference: '#org1' },
    })
    expect(meta.versionId).toBe('1')
    expect(text.status).toBe('generated')
    expect(text.div).toContain(`<b>${family}</b>`)
    expect(text.div).toStartWith('<div')

    const read = await getXml(`/Patient/${id}`)
    expect(read.status).toBe(200)
    expect(await readXml(read)).toEqual(json)
  })

  test('an XML PUT creates and then updates; vread in XML', async () => {
    const id = unique('xml-put-')
    const first = await sendXml(`/Patient/${id}`, 'PUT', { resourceType: 'Patient', id, active: true })
    expect(first.status).toBe(201)
    expect((await readXml(first)).meta.versionId).toBe('1')
    const second = await sendXml(`/Patient/${id}`, 'PUT', { resourceType: 'Patient', id, active: false })
    expect(second.status).toBe(200)
    expect(second.headers.get('etag')).toBe('W/"2"')
    const v1 = await readXml(await getXml(`/Patient/${id}/_history/1`))
    expect(v1.active).toBe(true)
    expect(v1.meta.versionId).toBe('1')
  })
})

describe('search in XML', () => {
  const family = unique('Xmlsearch')
  const ids: string[] = []

  beforeAll(async () => {
    for (const given of ['Ada', 'Bea']) ids.push((await createJson({ resourceType: 'Patient', name: [{ family, given: [given] }] })).id)
  })

  /** A searchset Bundle in XML with exactly the Patients created above as matches. */
  async function expectMatches(res: Response): Promise<any> {
    expect(res.status).toBe(200)
    const bundle = await readXml(res)
    expect(bundle.resourceType).toBe('Bundle')
    expect(bundle.type).toBe('searchset')
    expect(bundle.total).toBe(2)
    const matches = bundle.entry.filter((e: any) => e.search?.mode === 'match')
    expect(matches.map((e: any) => e.resource.id).sort()).toEqual([...ids].sort())
    for (const e of matches) {
      expect(e.resource.resourceType).toBe('Patient')
      expect(e.resource.name[0].family).toBe(family)
      expect(e.resource.meta.versionId).toBe('1')
      expect(e.fullUrl).toEndWith(`/Patient/${e.resource.id}`)
    }
    return bundle
  }

  test('GET /Patient?name=...&_format=xml', async () => {
    const res = await s.fhirFetch(`/Patient?name=${family}&_format=xml`)
    const bundle = await expectMatches(res)
    expect(bundle.link.find((l: any) => l.relation === 'self')?.url).toContain(`name=${family}`)
  })

  test('GET /Patient?name=... with Accept: application/fhir+xml', async () => {
    await expectMatches(await getXml(`/Patient?name=${family}`))
  })

  test('POST /Patient/_search with a form body and Accept XML', async () => {
    const res = await s.fhirFetch('/Patient/_search', {
      method: 'POST',
      body: new URLSearchParams({ name: family }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: FHIR_XML },
    })
    await expectMatches(res)
  })

  test('_include entries come back in XML with search mode include', async () => {
    const code = unique('xmlinc')
    await createJson({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://example.org/xml-test', code }] }, subject: { reference: `Patient/${ids[0]}` } })
    const res = await s.fhirFetch(`/Observation?code=http://example.org/xml-test|${code}&_include=Observation:subject&_format=xml`)
    expect(res.status).toBe(200)
    const bundle = await readXml(res)
    const modes = bundle.entry.map((e: any) => `${e.search.mode}:${e.resource.resourceType}`).sort()
    expect(modes).toEqual(['include:Patient', 'match:Observation'])
    expect(bundle.entry.find((e: any) => e.search.mode === 'include').resource.id).toBe(ids[0])
  })

  test('an empty result is a searchset with total 0 and no entries', async () => {
    const bundle = await readXml(await s.fhirFetch(`/Patient?name=${unique('Nobody')}&_format=xml`))
    expect(bundle.type).toBe('searchset')
    expect(bundle.total).toBe(0)
    expect(bundle.entry).toBeUndefined()
  })
})

describe('transaction and batch in XML', () => {
  test('a transaction with urn:uuid fullUrls and a reference between entries: 201s in an XML transaction-response', async () => {
    const patientUrl = uuid()
    const family = unique('Xmltx')
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<Bundle ${FHIR_NS}>
  <type value="transaction"/>
  <entry>
    <fullUrl value="${patientUrl}"/>
    <resource>
      <Patient>
        <name><family value="${family}"/></name>
        <gender value="male"/>
      </Patient>
    </resource>
    <request><method value="POST"/><url value="Patient"/></request>
  </entry>
  <entry>
    <fullUrl value="${uuid()}"/>
    <resource>
      <Observation>
        <status value="final"/>
        <code><text value="heart rate"/></code>
        <subject><reference value="${patientUrl}"/></subject>
        <valueQuantity><value value="61.0"/><unit value="/min"/></valueQuantity>
      </Observation>
    </resource>
    <request><method value="POST"/><url value="Observation"/></request>
  </entry>
</Bundle>`
    const res = await sendXml('', 'POST', xml)
    expect(res.status).toBe(200)
    const body = await readXml(res)
    expect(body.resourceType).toBe('Bundle')
    expect(body.type).toBe('transaction-response')
    expect(body.entry).toHaveLength(2)
    for (const e of body.entry) {
      expect(e.response.status).toStartWith('201')
      expect(e.response.etag).toBe('W/"1"')
    }
    const patientRef = target(body.entry[0].response.location)
    const observationRef = target(body.entry[1].response.location)
    expect(patientRef).toMatch(/^Patient\/[A-Za-z0-9\-.]+$/)
    expect(observationRef).toMatch(/^Observation\/[A-Za-z0-9\-.]+$/)

    const patient = await readJson(await s.fhirFetch(`/${patientRef}`))
    expect(patient.name[0].family).toBe(family)
    const obsText = await (await s.fhirFetch(`/${observationRef}`)).text()
    const obs = JSON.parse(obsText)
    expect(obs.subject.reference).toBe(patientRef)
    expect(obsText).toContain('"value":61.0')
    // The placeholder was rewritten in the stored XML form too.
    const obsXml = await readXml(await getXml(`/${observationRef}`))
    expect(obsXml.subject.reference).toBe(patientRef)
  })

  test('an invalid entry in an XML transaction: an XML OperationOutcome naming the entry, nothing written', async () => {
    const before = await rowCounts()
    const bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { fullUrl: uuid(), resource: { resourceType: 'Patient', active: true }, request: { method: 'POST', url: 'Patient' } },
        { fullUrl: uuid(), resource: { resourceType: 'Patient', gender: 'banana' }, request: { method: 'POST', url: 'Patient' } },
      ],
    }
    const res = await sendXml('', 'POST', bundle)
    expect(res.status).toBe(400)
    const oo = await xmlOutcome(res)
    expect(JSON.stringify(oo)).toContain('Bundle.entry[1]')
    expect(await rowCounts()).toEqual(before)
  })

  test('a batch in XML: independent entries with per-entry statuses, resources and outcomes in XML', async () => {
    const existing = await createJson({ resourceType: 'Patient', name: [{ family: unique('Xmlbatch') }] })
    const batch = {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [
        { fullUrl: uuid(), resource: { resourceType: 'Patient', active: true }, request: { method: 'POST', url: 'Patient' } },
        { request: { method: 'GET', url: `Patient/${existing.id}` } },
        { request: { method: 'GET', url: 'Patient/no-such-xml-batch-patient' } },
        { resource: { resourceType: 'Patient', id: 'xml-batch-bad', birthDate: 'not-a-date' }, request: { method: 'PUT', url: 'Patient/xml-batch-bad' } },
      ],
    }
    const res = await sendXml('', 'POST', batch)
    expect(res.status).toBe(200)
    const body = await readXml(res)
    expect(body.type).toBe('batch-response')
    expect(body.entry.map((e: any) => e.response.status.slice(0, 3))).toEqual(['201', '200', '404', '400'])
    expect(body.entry[1].resource.resourceType).toBe('Patient')
    expect(body.entry[1].resource.id).toBe(existing.id)
    expect(body.entry[2].response.outcome.resourceType).toBe('OperationOutcome')
    expect(body.entry[3].response.outcome.resourceType).toBe('OperationOutcome')
    const created = await s.fhirFetch(`/${target(body.entry[0].response.location)}`)
    expect(created.status).toBe(200)
    expect((await s.fhirFetch('/Patient/xml-batch-bad')).status).toBe(404)
  })
})

describe('FHIR Patch in XML', () => {
  const replaceBirthDate = (date: string) => `<?xml version="1.0" encoding="UTF-8"?>
<Parameters ${FHIR_NS}>
  <parameter>
    <name value="operation"/>
    <part><name value="type"/><valueCode value="replace"/></part>
    <part><name value="path"/><valueString value="Patient.birthDate"/></part>
    <part><name value="value"/><valueDate value="${date}"/></part>
  </parameter>
</Parameters>`

  test('PATCH with an XML Parameters body replaces birthDate; the patched resource reads back', async () => {
    const p = await createJson({ resourceType: 'Patient', birthDate: '1950-01-01', name: [{ family: 'Patchxml' }] })
    const res = await sendXml(`/Patient/${p.id}`, 'PATCH', replaceBirthDate('1960-02-02'))
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('W/"2"')
    const patched = await readXml(res)
    expect(patched.birthDate).toBe('1960-02-02')
    expect(patched.meta.versionId).toBe('2')
    expect(patched.name).toEqual([{ family: 'Patchxml' }])

    const json = await readJson(await s.fhirFetch(`/Patient/${p.id}`))
    expect(json.birthDate).toBe('1960-02-02')
    expect(json.meta.versionId).toBe('2')
    const xml = await readXml(await getXml(`/Patient/${p.id}`))
    expect(xml.birthDate).toBe('1960-02-02')
  })

  test('an XML patch that adds an element built from toFhirXml; JSON response when Accept is not given', async () => {
    const p = await createJson({ resourceType: 'Patient', active: true })
    const patch = {
      resourceType: 'Parameters',
      parameter: [
        {
          name: 'operation',
          part: [
            { name: 'type', valueCode: 'add' },
            { name: 'path', valueString: 'Patient' },
            { name: 'name', valueString: 'gender' },
            { name: 'value', valueCode: 'female' },
          ],
        },
      ],
    }
    const res = await s.fhirFetch(`/Patient/${p.id}`, { method: 'PATCH', body: toFhirXml(patch), headers: { 'content-type': FHIR_XML } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/fhir+json;charset=utf-8')
    const body = await readJson(res)
    expect(body.gender).toBe('female')
    expect(body.active).toBe(true)
  })

  test('an XML patch with an invalid value: 400 as an XML OperationOutcome, nothing written', async () => {
    const p = await createJson({ resourceType: 'Patient', birthDate: '1950-01-01' })
    const res = await sendXml(`/Patient/${p.id}`, 'PATCH', replaceBirthDate('not-a-date'))
    expect(res.status).toBe(400)
    await xmlOutcome(res)
    const read = await s.fhirFetch(`/Patient/${p.id}`)
    expect(read.headers.get('etag')).toBe('W/"1"')
  })
})

describe('$validate in XML', () => {
  const parameters = (patient: string) => `<Parameters ${FHIR_NS}>
  <parameter>
    <name value="resource"/>
    <resource>${patient}</resource>
  </parameter>
</Parameters>`

  test('a valid resource in the `resource` parameter: 200 XML OperationOutcome without errors, nothing stored', async () => {
    const before = await rowCounts()
    const res = await sendXml('/Patient/$validate', 'POST', parameters('<Patient><active value="true"/><gender value="female"/></Patient>'))
    expect(res.status).toBe(200)
    expect(errors(await xmlOutcome(res))).toHaveLength(0)
    expect(await rowCounts()).toEqual(before)
  })

  test('an invalid resource in the `resource` parameter: 412 with the element path, in XML', async () => {
    const res = await sendXml('/Patient/$validate', 'POST', parameters('<Patient><gender value="banana"/></Patient>'))
    expect(res.status).toBe(412)
    const oo = await xmlOutcome(res)
    expect(errors(oo).length).toBeGreaterThan(0)
    expect(expressions(oo)).toContain('Patient.gender')
  })

  test('the resource itself as the XML body', async () => {
    const res = await sendXml('/Patient/$validate', 'POST', `<Patient ${FHIR_NS}><birthDate value="1980-02-30"/></Patient>`)
    expect(res.status).toBe(412)
    expect(expressions(await xmlOutcome(res))).toContain('Patient.birthDate')
  })
})

describe('history in XML', () => {
  test('instance and type history as XML Bundles of type history, newest first', async () => {
    const p = await createJson({ resourceType: 'Patient', active: true, name: [{ family: unique('Xmlhist') }] })
    const updated = await sendXml(`/Patient/${p.id}`, 'PUT', { ...p, meta: undefined, active: false })
    expect(updated.status).toBe(200)

    const res = await getXml(`/Patient/${p.id}/_history`)
    expect(res.status).toBe(200)
    const bundle = await readXml(res)
    expect(bundle.resourceType).toBe('Bundle')
    expect(bundle.type).toBe('history')
    expect(bundle.total).toBe(2)
    expect(bundle.entry.map((e: any) => e.resource.meta.versionId)).toEqual(['2', '1'])
    expect(bundle.entry.map((e: any) => e.resource.active)).toEqual([false, true])
    for (const e of bundle.entry) expect(e.fullUrl).toEndWith(`/Patient/${p.id}`)

    const typeLevel = await readXml(await s.fhirFetch('/Patient/_history?_count=5&_format=xml'))
    expect(typeLevel.type).toBe('history')
    expect(typeLevel.entry.length).toBeGreaterThan(0)
    expect(typeLevel.entry.every((e: any) => e.resource === undefined || e.resource.resourceType === 'Patient')).toBe(true)
  })

  test('history of a deleted resource in XML: the delete entry carries a request and no resource', async () => {
    const p = await createJson({ resourceType: 'Patient', active: true })
    expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBeLessThan(300)
    const bundle = await readXml(await s.fhirFetch(`/Patient/${p.id}/_history?_format=xml`))
    expect(bundle.entry).toHaveLength(2)
    expect(bundle.entry[0].resource).toBeUndefined()
    expect(bundle.entry[0].request.method).toBe('DELETE')
    expect(bundle.entry[1].resource.id).toBe(p.id)
  })
})

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
    expect((await xmlOutcome(res)).issue[0].code).toBe('not-found')
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
    expect(await formatOf('', 'text/html, application/fhir+xml;q=0.8, */*;q=0.1')).toBe('xml')
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

  test('an unsupported Content-Type: 415 as an XML OperationOutcome, nothing written', async () => {
    const before = await rowCounts()
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      body: `<Patient ${FHIR_NS}/>`,
      headers: { 'content-type': 'text/plain', accept: FHIR_XML },
    })
    expect(res.status).toBe(415)
    await xmlOutcome(res)
    expect(await rowCounts()).toEqual(before)
  })

  test('Accept: image/png: 406 with an OperationOutcome', async () => {
    const res = await s.fhirFetch(`/Patient/${id}`, { headers: { accept: 'image/png' } })
    expect(res.status).toBe(406)
    expect((await readJson(res)).resourceType).toBe('OperationOutcome')
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
