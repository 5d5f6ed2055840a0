// Inline match-URL references on a plain create or update, as HAPI resolves them on every write
// (allowInlineMatchUrlReferences, on by default; SearchParamWithInlineReferencesExtractor): one match is
// rewritten to Type/id and searchable, none is 404 HAPI-1091, several 412 HAPI-1092, nothing written.
// https://hl7.org/fhir/R4/http.html#cond-refs
import { describe, expect, test } from 'bun:test'
import { create, diagnostics, observation, patient, read, rows, SYS, unique } from './bundle-http'
import { readJson, useTestServer } from './harness'

const s = useTestServer()

const inline = (value: string) => `Patient?identifier=${encodeURIComponent(`${SYS}|${value}`)}`

async function searchIds(query: string): Promise<string[]> {
  const res = await s.fhirFetch(`/Observation?${query}`)
  expect(res.status).toBe(200)
  return ((await readJson(res)).entry ?? []).map((e: any) => e.resource.id)
}

describe('a create or update whose reference is a match URL', () => {
  test('create: the one match is written as Type/id, and the reference is searchable', async () => {
    const v = unique('inline-one')
    const p = await create(s, patient(v))
    const obs = await create(s, observation(inline(v)))
    expect(obs.subject.reference).toBe(`Patient/${p.id}`)
    expect((await read(s, `Observation/${obs.id}`)).subject.reference).toBe(`Patient/${p.id}`)
    expect(await searchIds(`subject=Patient/${p.id}`)).toEqual([obs.id])
  })

  test('conditional create (If-None-Exist) and update (PUT) too', async () => {
    const v = unique('inline-put')
    const p = await create(s, patient(v))
    const res = await s.fhirFetch('/Observation', {
      method: 'POST',
      json: observation(inline(v), { identifier: [{ system: SYS, value: v }] }),
      headers: { 'if-none-exist': `identifier=${SYS}|${v}` },
    })
    expect(res.status).toBe(201)
    const obs = await readJson(res)
    expect(obs.subject.reference).toBe(`Patient/${p.id}`)
    const other = await create(s, patient(unique('inline-other')))
    const put = await s.fhirFetch(`/Observation/${obs.id}`, {
      method: 'PUT',
      json: { ...obs, subject: { reference: `Patient?identifier=${encodeURIComponent(other.identifier[0].system)}|${other.identifier[0].value}` } },
    })
    expect(put.status).toBe(200)
    expect((await readJson(put)).subject.reference).toBe(`Patient/${other.id}`)
    expect(await searchIds(`subject=Patient/${other.id}`)).toEqual([obs.id])
  })

  test('patch: a conditional reference in the value written is resolved too', async () => {
    const v = unique('inline-patch')
    const p = await create(s, patient(v))
    const obs = await create(s, observation(`Patient/${p.id}`))
    const other = await create(s, patient(unique('inline-patch-other')))
    const patch = {
      resourceType: 'Parameters',
      parameter: [
        {
          name: 'operation',
          part: [
            { name: 'type', valueCode: 'replace' },
            { name: 'path', valueString: 'Observation.subject' },
            { name: 'value', valueReference: { reference: inline(other.identifier[0].value) } },
          ],
        },
      ],
    }
    const res = await s.fhirFetch(`/Observation/${obs.id}`, { method: 'PATCH', json: patch })
    expect(res.status).toBe(200)
    expect((await readJson(res)).subject.reference).toBe(`Patient/${other.id}`)
    expect(await searchIds(`subject=Patient/${other.id}`)).toEqual([obs.id])
  })

  test('no match: 404 HAPI-1091, nothing written', async () => {
    const before = await rows(s)
    const value = inline(unique('inline-none'))
    const res = await s.fhirFetch('/Observation', { method: 'POST', json: observation(value) })
    expect(res.status).toBe(404)
    expect(await diagnostics(res)).toBe(`HAPI-1091: Invalid match URL "${value}" - No resources match this search`)
    expect(await rows(s)).toEqual(before)
  })

  test('several matches: 412 HAPI-1092, nothing written', async () => {
    const v = unique('inline-two')
    await create(s, patient(v))
    await create(s, patient(v))
    const before = await rows(s)
    const res = await s.fhirFetch('/Observation', { method: 'POST', json: observation(inline(v)) })
    expect(res.status).toBe(412)
    expect(await diagnostics(res)).toStartWith('HAPI-1092: ')
    expect(await rows(s)).toEqual(before)
  })
})
