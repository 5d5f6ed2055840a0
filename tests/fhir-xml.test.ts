// FHIR XML over HTTP through the real app: create and read, search, transaction and batch Bundles,
// FHIR Patch and $validate (history and narratives: fhir-xml-history.test.ts; errors and negotiation:
// fhir-xml-negotiation.test.ts).
// https://hl7.org/fhir/R4/xml.html  https://hl7.org/fhir/R4/http.html#mime-type
import { beforeAll, describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'
import { errors, expressions, FHIR_NS, FHIR_XML, readXml, target, unique, uuid, XHTML_NS, xmlClient, xmlOutcome } from './xml-http'
import { toFhirXml } from '../shared/fhir/format/xml-write'

const s = useTestServer()

const { sendXml, getXml, rowCounts, createJson } = xmlClient(s)

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
    await createJson({
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: 'http://example.org/xml-test', code }] },
      subject: { reference: `Patient/${ids[0]}` },
    })
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
      expect(e.response.etag).toBe('1') // bare, as HAPI's BaseTransactionProcessor
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

  test('an invalid resource in the `resource` parameter: 200 with the element path, in XML', async () => {
    const res = await sendXml('/Patient/$validate', 'POST', parameters('<Patient><gender value="banana"/></Patient>'))
    expect(res.status).toBe(200)
    const oo = await xmlOutcome(res)
    expect(errors(oo).length).toBeGreaterThan(0)
    expect(expressions(oo)).toContain('Patient.gender')
  })

  test('the resource itself as the XML body', async () => {
    const res = await sendXml('/Patient/$validate', 'POST', `<Patient ${FHIR_NS}><birthDate value="1980-02-30"/></Patient>`)
    expect(res.status).toBe(200)
    expect(expressions(await xmlOutcome(res))).toContain('Patient.birthDate')
  })
})
