// The admin and terminology operations in FHIR XML: each asked once in JSON and once with an XML
// Parameters body (Content-Type application/fhir+xml) and an XML answer (`_format=xml` or Accept),
// the XML answer read back must equal the JSON one. https://hl7.org/fhir/R4/parameters.html
import { describe, expect, test } from 'bun:test'
import { parseFhirXml } from '../shared/fhir/format/xml-parse'
import { createResource, readJson, useTestServer } from './harness'
import { FHIR_NS, FHIR_XML, readXml, unique } from './xml-http'

const s = useTestServer()

const GENDER_VS = 'http://hl7.org/fhir/ValueSet/administrative-gender'
const GENDER_CS = 'http://hl7.org/fhir/administrative-gender'
const TAGS = 'http://example.org/tags'

/** A Parameters resource in FHIR XML from its `<parameter>` elements. */
const xmlParameters = (...parameters: string[]) => `<?xml version="1.0" encoding="UTF-8"?><Parameters ${FHIR_NS}>${parameters.join('')}</Parameters>`
const xmlParam = (name: string, content: string) => `<parameter><name value="${name}"/>${content}</parameter>`

interface Call {
  method?: 'GET' | 'POST'
  /** The JSON Parameters body; `xml` must say the same in FHIR XML. */
  json?: any
  xml?: string
  /** Ask for XML by Accept rather than `_format=xml`. */
  accept?: boolean
}

/** The answer in JSON. */
async function askJson(path: string, call: Call): Promise<{ status: number; body: any }> {
  const res = await s.fhirFetch(path, { method: call.method ?? 'POST', json: call.json })
  return { status: res.status, body: await readJson(res) }
}

/** The answer in XML (read back as JSON), with the body sent as FHIR XML. */
async function askXml(path: string, call: Call): Promise<{ status: number; body: any }> {
  if (call.xml !== undefined) expect(parseFhirXml(call.xml)).toEqual(call.json) // the two requests say the same
  const url = call.accept ? path : `${path}${path.includes('?') ? '&' : '?'}_format=xml`
  const headers: Record<string, string> = call.accept ? { accept: FHIR_XML } : {}
  if (call.xml !== undefined) headers['content-type'] = FHIR_XML
  const res = await s.fhirFetch(url, { method: call.method ?? 'POST', body: call.xml, headers })
  return { status: res.status, body: await readXml(res) }
}

/** Asks in both formats; the XML answer must read back to the JSON one (after `normalize`). */
async function sameInBoth(path: string, call: Call, normalize: (body: any) => any = (b) => b): Promise<any> {
  const json = await askJson(path, call)
  const xml = await askXml(path, call)
  expect(xml.status).toBe(json.status)
  expect(normalize(xml.body)).toEqual(normalize(json.body))
  return json.body
}

const param = (p: any, name: string) => p.parameter?.find((x: any) => x.name === name)
/** A job's id differs between the two calls. */
const withoutJobId = (p: any) => ({ ...p, parameter: p.parameter.map((x: any) => (x.name === 'jobId' ? { name: 'jobId', valueString: '(job)' } : x)) })

async function patientWith(tags: string[] = []): Promise<any> {
  const meta = tags.length ? { tag: tags.map((code) => ({ system: TAGS, code })) } : undefined
  return createResource(s, { resourceType: 'Patient', meta, name: [{ family: unique('Xmlop') }], gender: 'female' })
}

const metaXml = `<valueMeta><profile value="http://example.org/StructureDefinition/p"/><security><system value="http://terminology.hl7.org/CodeSystem/v3-Confidentiality"/><code value="R"/></security><tag><system value="${TAGS}"/><code value="added"/><display value="Added"/></tag></valueMeta>`
const metaJson = {
  profile: ['http://example.org/StructureDefinition/p'],
  security: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality', code: 'R' }],
  tag: [{ system: TAGS, code: 'added', display: 'Added' }],
}

/** The answer about one of two twin patients, without what differs between them. */
const twin = (answer: { status: number; body: any }) => {
  const { lastUpdated, ...meta } = param(answer.body, 'return').valueMeta
  expect(lastUpdated).toBeString()
  return { status: answer.status, meta }
}

describe('$meta, $meta-add, $meta-delete', () => {
  test('$meta at instance, type and system level answers valueMeta in XML', async () => {
    const p = await patientWith(['one'])
    const meta = await sameInBoth(`/Patient/${p.id}/$meta`, { method: 'GET', accept: true })
    expect(param(meta, 'return').valueMeta.tag).toEqual([{ system: TAGS, code: 'one' }])
    await sameInBoth('/Patient/$meta', { method: 'GET' })
    await sameInBoth('/$meta', { method: 'POST', json: { resourceType: 'Parameters' }, xml: xmlParameters() })
  })

  test('$meta-add and $meta-delete take valueMeta in XML', async () => {
    const [a, b] = [await patientWith(), await patientWith()]
    const call = { json: { resourceType: 'Parameters', parameter: [{ name: 'meta', valueMeta: metaJson }] }, xml: xmlParameters(xmlParam('meta', metaXml)) }
    // An XML read before and after: the XML written from the stored version must not outlive it.
    expect((await readXml(await s.fhirFetch(`/Patient/${b.id}?_format=xml`))).meta.tag).toBeUndefined()
    const added = await askJson(`/Patient/${a.id}/$meta-add`, call)
    const addedXml = await askXml(`/Patient/${b.id}/$meta-add`, call)
    expect(twin(addedXml)).toEqual(twin(added))
    expect(param(addedXml.body, 'return').valueMeta).toMatchObject(metaJson)
    const stored = await readJson(await s.fhirFetch(`/Patient/${b.id}`))
    expect(stored.meta).toMatchObject(metaJson)
    expect(await readXml(await s.fhirFetch(`/Patient/${b.id}?_format=xml`))).toEqual(stored)

    const deleted = await askJson(`/Patient/${a.id}/$meta-delete`, call)
    const deletedXml = await askXml(`/Patient/${b.id}/$meta-delete`, { ...call, accept: true })
    expect(twin(deletedXml)).toEqual(twin(deleted))
    expect(param(deletedXml.body, 'return').valueMeta.tag).toBeUndefined()
  })
})

describe('operation errors in XML', () => {
  test('$meta-add without a meta parameter, and an XML body that is not Parameters: 400 OperationOutcome in XML', async () => {
    const p = await patientWith()
    const missing = await s.fhirFetch(`/Patient/${p.id}/$meta-add?_format=xml`, {
      method: 'POST',
      body: xmlParameters(),
      headers: { 'content-type': FHIR_XML },
    })
    expect(missing.status).toBe(400)
    expect((await readXml(missing)).resourceType).toBe('OperationOutcome')
    const broken = await s.fhirFetch('/$expunge', {
      method: 'POST',
      body: xmlParameters('<parameter><name value="limit"/><valueInteger value="x"/>'),
      headers: { 'content-type': FHIR_XML, accept: FHIR_XML },
    })
    expect(broken.status).toBe(400)
    expect((await readXml(broken)).resourceType).toBe('OperationOutcome')
  })
})

describe('$expunge and $get-resource-counts', () => {
  test('$expunge with an XML body answers the count in XML', async () => {
    const [a, b] = [await patientWith(), await patientWith()]
    for (const p of [a, b]) expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBe(200)
    const call = {
      json: {
        resourceType: 'Parameters',
        parameter: [
          { name: 'expungeDeletedResources', valueBoolean: true },
          { name: 'limit', valueInteger: 10 },
        ],
      },
      xml: xmlParameters(xmlParam('expungeDeletedResources', '<valueBoolean value="true"/>'), xmlParam('limit', '<valueInteger value="10"/>')),
    }
    const json = await askJson(`/Patient/${a.id}/$expunge`, call)
    const xml = await askXml(`/Patient/${b.id}/$expunge`, call)
    expect(xml).toEqual(json)
    expect(param(xml.body, 'count').valueInteger).toBeGreaterThan(0)
    expect((await s.fhirFetch(`/Patient/${b.id}`)).status).toBe(404)
  })

  test('$get-resource-counts by GET and by POST with an empty XML Parameters', async () => {
    await patientWith()
    const counts = await sameInBoth('/$get-resource-counts', { method: 'GET' })
    expect(param(counts, 'Patient').valueInteger).toBeGreaterThan(0)
    await sameInBoth('/$get-resource-counts', { json: { resourceType: 'Parameters' }, xml: xmlParameters(), accept: true })
  })
})

describe('reindexing', () => {
  test('$reindex at system level takes url and batchSize in XML and answers the job id', async () => {
    const call = {
      json: {
        resourceType: 'Parameters',
        parameter: [
          { name: 'url', valueString: 'Patient?' },
          { name: 'batchSize', valueInteger: 50 },
        ],
      },
      xml: xmlParameters(xmlParam('url', '<valueString value="Patient?"/>'), xmlParam('batchSize', '<valueInteger value="50"/>')),
    }
    const answer = await sameInBoth('/$reindex', call, withoutJobId)
    expect(param(answer, 'jobId').valueString).toBeString()
  })

  test('$reindex of one instance answers nested parts in XML', async () => {
    const p = await patientWith(['reindexed'])
    const answer = await sameInBoth(`/Patient/${p.id}/$reindex`, { json: { resourceType: 'Parameters' }, xml: xmlParameters() })
    const sp = param(answer, 'SearchParameters')
    expect(sp.part.length).toBeGreaterThan(0)
    expect(sp.part[0].part.map((x: any) => x.name)).toContain('Action')
  })

  test('$mark-all-resources-for-reindexing then $perform-reindexing-pass', async () => {
    await patientWith()
    const mark = {
      json: { resourceType: 'Parameters', parameter: [{ name: 'type', valueCode: 'Patient' }] },
      xml: xmlParameters(xmlParam('type', '<valueCode value="Patient"/>')),
    }
    await sameInBoth('/$mark-all-resources-for-reindexing', mark)
    // Each pass indexes what is marked: mark again between the JSON and the XML pass.
    const json = await askJson('/$perform-reindexing-pass', { json: { resourceType: 'Parameters' } })
    await askJson('/$mark-all-resources-for-reindexing', mark)
    const xml = await askXml('/$perform-reindexing-pass', { json: { resourceType: 'Parameters' }, xml: xmlParameters() })
    expect(xml).toEqual(json)
    expect(param(xml.body, 'status').valueString).toMatch(/^Indexed \d+ resources$/)
  })

  test('$reindex-terminology answers success and the job id in XML', async () => {
    const answer = await sameInBoth('/$reindex-terminology', { json: { resourceType: 'Parameters' }, xml: xmlParameters() }, withoutJobId)
    expect(param(answer, 'success').valueBoolean).toBe(true)
  })
})

describe('terminology', () => {
  // The expansion's identifier and timestamp are made per call.
  const expansion = (vs: any) => ({ ...vs, expansion: { ...vs.expansion, identifier: undefined, timestamp: undefined } })

  test('ValueSet/$expand by url in XML, and of an inline ValueSet inside Parameters.parameter.resource', async () => {
    const byUrl = await sameInBoth(`/ValueSet/$expand?url=${encodeURIComponent(GENDER_VS)}`, { method: 'GET' }, expansion)
    expect(byUrl.expansion.contains.length).toBe(4)
    const inline = {
      json: {
        resourceType: 'Parameters',
        parameter: [
          {
            name: 'valueSet',
            resource: {
              resourceType: 'ValueSet',
              status: 'draft',
              text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml"><p>Gender &amp; co</p></div>' },
              compose: { include: [{ system: GENDER_CS }], exclude: [{ system: GENDER_CS, concept: [{ code: 'unknown' }] }] },
            },
          },
          { name: 'count', valueInteger: 2 },
        ],
      },
      xml: xmlParameters(
        xmlParam(
          'valueSet',
          '<resource><ValueSet><text><status value="generated"/><div xmlns="http://www.w3.org/1999/xhtml"><p>Gender &amp; co</p></div></text>' +
            `<status value="draft"/><compose><include><system value="${GENDER_CS}"/></include><exclude><system value="${GENDER_CS}"/><concept><code value="unknown"/></concept></exclude></compose></ValueSet></resource>`,
        ),
        xmlParam('count', '<valueInteger value="2"/>'),
      ),
    }
    const answer = await sameInBoth('/ValueSet/$expand', inline, expansion)
    expect(answer.expansion.contains.map((c: any) => c.code)).toEqual(['male', 'female'])
  })

  test('CodeSystem/$lookup with a valueCoding in XML answers nested property parts', async () => {
    const call = {
      json: { resourceType: 'Parameters', parameter: [{ name: 'coding', valueCoding: { system: GENDER_CS, code: 'male' } }] },
      xml: xmlParameters(xmlParam('coding', `<valueCoding><system value="${GENDER_CS}"/><code value="male"/></valueCoding>`)),
    }
    const answer = await sameInBoth('/CodeSystem/$lookup', call)
    expect(param(answer, 'display').valueString).toBe('Male')
    expect(param(answer, 'abstract').valueBoolean).toBe(false)
  })

  test('ValueSet/$validate-code with a valueCodeableConcept, CodeSystem/$validate-code with valueUri and valueCode', async () => {
    const vs = {
      json: {
        resourceType: 'Parameters',
        parameter: [
          { name: 'url', valueUri: GENDER_VS },
          {
            name: 'codeableConcept',
            valueCodeableConcept: {
              coding: [
                { system: 'http://loinc.org', code: '8302-2' },
                { system: GENDER_CS, code: 'other' },
              ],
              text: 'x',
            },
          },
        ],
      },
      xml: xmlParameters(
        xmlParam('url', `<valueUri value="${GENDER_VS}"/>`),
        xmlParam(
          'codeableConcept',
          `<valueCodeableConcept><coding><system value="http://loinc.org"/><code value="8302-2"/></coding><coding><system value="${GENDER_CS}"/><code value="other"/></coding><text value="x"/></valueCodeableConcept>`,
        ),
      ),
    }
    expect(param(await sameInBoth('/ValueSet/$validate-code', vs), 'result').valueBoolean).toBe(true)
    const cs = {
      json: {
        resourceType: 'Parameters',
        parameter: [
          { name: 'url', valueUri: GENDER_CS },
          { name: 'code', valueCode: 'robot' },
        ],
      },
      xml: xmlParameters(xmlParam('url', `<valueUri value="${GENDER_CS}"/>`), xmlParam('code', '<valueCode value="robot"/>')),
    }
    const bad = await sameInBoth('/CodeSystem/$validate-code', { ...cs, accept: true })
    expect(param(bad, 'result').valueBoolean).toBe(false)
  })
})

describe('Patient/$everything', () => {
  // The Bundle's id, timestamp and paging cursor are made per call; `_format` stays in the links.
  const searchset = (b: any) => ({
    ...b,
    id: undefined,
    meta: undefined,
    timestamp: undefined,
    link: b.link?.map((l: any) => ({ relation: l.relation })),
  })

  test('by GET with Accept and by POST with an XML Parameters body (_count, _type)', async () => {
    const p = await patientWith()
    await createResource(s, {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'x' },
      subject: { reference: `Patient/${p.id}` },
      valueQuantity: { value: 1.5, unit: 'mg' },
    })
    const got = await sameInBoth(`/Patient/${p.id}/$everything`, { method: 'GET', accept: true }, searchset)
    expect(got.entry.map((e: any) => e.resource.resourceType).sort()).toEqual(['Observation', 'Patient'])
    const call = {
      json: {
        resourceType: 'Parameters',
        parameter: [
          { name: '_count', valueInteger: 1 },
          { name: '_type', valueString: 'Patient,Observation' },
        ],
      },
      xml: xmlParameters(xmlParam('_count', '<valueInteger value="1"/>'), xmlParam('_type', '<valueString value="Patient,Observation"/>')),
    }
    const page = await sameInBoth(`/Patient/${p.id}/$everything`, call, searchset)
    expect(page.entry).toHaveLength(1)
  })
})
