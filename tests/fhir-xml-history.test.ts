// FHIR XML over HTTP through the real app: history as XML Bundles, and narrative XHTML on write.
// https://hl7.org/fhir/R4/xml.html  https://hl7.org/fhir/R4/narrative.html
import { describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'
import { expressions, FHIR_XML, readXml, target, unique, uuid, XHTML_NS, xmlClient, xmlOutcome } from './xml-http'

const s = useTestServer()

const { sendXml, getXml, rowCounts, createJson } = xmlClient(s)

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

describe('narrative XHTML on write', () => {
  test('a div without a namespace is accepted and stored with the XHTML namespace declared (as HAPI), in JSON and XML', async () => {
    const family = unique('Nons')
    const div = `<div><p>${family}</p></div>`
    const contained = [{ resourceType: 'Organization', id: 'o', name: 'x', text: { status: 'generated', div: ' <div>org</div>' } }]
    const created = await createJson({ resourceType: 'Patient', text: { status: 'generated', div }, contained, name: [{ family }] })
    expect(created.text.div).toBe(`<div ${XHTML_NS}><p>${family}</p></div>`)
    expect(created.contained[0].text.div).toBe(`<div ${XHTML_NS}>org</div>`)
    expect((await readJson(await s.fhirFetch(`/Patient/${created.id}`))).text.div).toBe(created.text.div)
    const xml = await (await getXml(`/Patient/${created.id}`)).text()
    expect(xml).toContain(`<text><status value="generated"/><div ${XHTML_NS}><p>${family}</p></div></text>`)
    // The same in a transaction, which the worker stores.
    const bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [{ fullUrl: uuid(), resource: { resourceType: 'Patient', text: { status: 'generated', div } }, request: { method: 'POST', url: 'Patient' } }],
    }
    const res = await s.fhirFetch('', { method: 'POST', json: bundle })
    expect(res.status).toBe(200)
    const location = (await readJson(res)).entry[0].response.location
    expect((await readJson(await s.fhirFetch(`/${target(location)}`))).text.div).toBe(`<div ${XHTML_NS}><p>${family}</p></div>`)
  })

  test('a div that is not well-formed XHTML is refused with 400 naming Patient.text.div, nothing written', async () => {
    const before = await rowCounts()
    for (const div of [`<div ${XHTML_NS}><p>open</div>`, `<div ${XHTML_NS}>a&nbsp;b</div>`, `<div ${XHTML_NS}>x</div><script>alert(1)</script>`]) {
      const res = await s.fhirFetch('/Patient', {
        method: 'POST',
        json: { resourceType: 'Patient', text: { status: 'generated', div } },
        headers: { accept: FHIR_XML },
      })
      expect(res.status).toBe(400)
      expect(expressions(await xmlOutcome(res))).toContain('Patient.text.div')
    }
    expect(await rowCounts()).toEqual(before)
  })
})
