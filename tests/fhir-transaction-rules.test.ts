// A transaction entry obeys the rules of the same request sent alone: the HTTP interaction and the
// Bundle entry are planned by one function each (interactions/*: planUpdate, planPatch, planDelete), so
// each case below answers the same status and HAPI code both ways, and the Bundle writes nothing.
// https://hl7.org/fhir/R4/http.html#transaction  (HAPI: the same DAO methods serve both)
import { describe, expect, test } from 'bun:test'
import { create, del, diagnostics, patient, put, rejected, transaction, unique } from './bundle-http'
import { readJson, useTestServer } from './harness'

const s = useTestServer()

const replaceBirthDate = {
  resourceType: 'Parameters',
  parameter: [
    {
      name: 'operation',
      part: [
        { name: 'type', valueCode: 'replace' },
        { name: 'path', valueString: 'Patient.birthDate' },
        { name: 'value', valueDate: '1960-02-02' },
      ],
    },
  ],
}

/** A JSON Patch (in a Bundle, an entry whose resource is the array of operations). */
const changeId = [{ op: 'replace', path: '/id', value: 'someone-else' }]

const patchEntry = (url: string, body: unknown, request: Record<string, string> = {}) => ({ resource: body, request: { method: 'PATCH', url, ...request } })

/** The request alone answers `status` with `code`; in a Bundle too, naming the entry and writing nothing. */
async function sameBothWays(alone: () => Promise<Response>, entry: unknown, status: number, code: string): Promise<{ alone: string; inBundle: string }> {
  const res = await alone()
  expect(res.status).toBe(status)
  const aloneText = await diagnostics(res)
  expect(aloneText).toContain(`${code}: `)
  const inBundle = await rejected(s, transaction([entry]), status, 0)
  expect(inBundle).toContain(`${code}: `)
  return { alone: aloneText, inBundle }
}

describe('a transaction entry and the same request alone', () => {
  test('PUT with If-Match of an earlier version: 409 HAPI-0989', async () => {
    const p = await create(s, patient(unique('rules-put')))
    const body = { ...p, active: true }
    await sameBothWays(
      () => s.fhirFetch(`/Patient/${p.id}`, { method: 'PUT', json: body, headers: { 'if-match': 'W/"7"' } }),
      put(`Patient/${p.id}`, body, { ifMatch: 'W/"7"' }),
      409,
      'HAPI-0989',
    )
  })

  test('PUT with If-Match of an id never used: 409 HAPI-0989, nothing created', async () => {
    const id = unique('rules-absent')
    const body = { ...patient(id), id }
    await sameBothWays(
      () => s.fhirFetch(`/Patient/${id}`, { method: 'PUT', json: body, headers: { 'if-match': 'W/"1"' } }),
      put(`Patient/${id}`, body, { ifMatch: 'W/"1"' }),
      409,
      'HAPI-0989',
    )
  })

  test('PATCH with If-Match of an earlier version: 409 HAPI-0974', async () => {
    const p = await create(s, patient(unique('rules-patch')))
    await sameBothWays(
      () => s.fhirFetch(`/Patient/${p.id}`, { method: 'PATCH', json: replaceBirthDate, headers: { 'if-match': 'W/"7"' } }),
      patchEntry(`Patient/${p.id}`, replaceBirthDate, { ifMatch: 'W/"7"' }),
      409,
      'HAPI-0974',
    )
  })

  test('a PATCH that changes the id: 400 HAPI-1268', async () => {
    const p = await create(s, patient(unique('rules-patch-id')))
    await sameBothWays(
      () => s.fhirFetch(`/Patient/${p.id}`, { method: 'PATCH', body: JSON.stringify(changeId), headers: { 'content-type': 'application/json-patch+json' } }),
      patchEntry(`Patient/${p.id}`, changeId),
      400,
      'HAPI-1268',
    )
  })

  // HAPI: BaseStorageDao.createResourceGoneException, "Resource was deleted at <instant>" with no HAPI code.
  test('a PATCH of a deleted resource: 410 naming when it was deleted', async () => {
    const p = await create(s, patient(unique('rules-patch-gone')))
    expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBe(200)
    const res = await s.fhirFetch(`/Patient/${p.id}`, { method: 'PATCH', json: replaceBirthDate })
    expect(res.status).toBe(410)
    const alone = await diagnostics(res)
    expect(alone).toMatch(/^Resource was deleted at \d{4}-\d\d-\d\dT/)
    const inBundle = await rejected(s, transaction([patchEntry(`Patient/${p.id}`, replaceBirthDate)]), 410, 0)
    expect(inBundle).toContain(alone)
  })

  test('DELETE with If-Match of an earlier version: 409 HAPI-0961', async () => {
    const p = await create(s, patient(unique('rules-delete')))
    await sameBothWays(
      () => s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE', headers: { 'if-match': 'W/"7"' } }),
      { request: { method: 'DELETE', url: `Patient/${p.id}`, ifMatch: 'W/"7"' } },
      409,
      'HAPI-0961',
    )
  })

  test('a conditional PUT whose body names another resource than its match: 400 HAPI-2279', async () => {
    const v = unique('rules-cond-put')
    await create(s, patient(v))
    const url = `Patient?identifier=${encodeURIComponent(`http://example.org/tx-test|${v}`)}`
    const body = { ...patient(v), id: 'someone-else', active: true }
    await sameBothWays(() => s.fhirFetch(`/${url}`, { method: 'PUT', json: body }), put(url, body), 400, 'HAPI-2279')
  })

  test('a conditional PUT that matches nothing, its body naming a live resource: 409, that resource left alone', async () => {
    const id = unique('rules-cond-live')
    expect((await s.fhirFetch(`/Patient/${id}`, { method: 'PUT', json: { ...patient(id), id } })).status).toBe(201)
    const v = unique('rules-cond-none')
    const url = `Patient?identifier=${encodeURIComponent(`http://example.org/tx-test|${v}`)}`
    const body = { ...patient(v), id, active: true }
    const res = await s.fhirFetch(`/${url}`, { method: 'PUT', json: body })
    expect(res.status).toBe(409)
    const text = await rejected(s, transaction([put(url, body)]), 409, 0)
    expect(text).toContain(`Can not create resource with ID[${id}]`)
    expect((await readJson(await s.fhirFetch(`/Patient/${id}`))).meta.versionId).toBe('1')
  })

  test('a conditional DELETE whose URL matches three resources: 412 HAPI-0962 counting them', async () => {
    const v = unique('rules-three')
    for (let i = 0; i < 3; i++) await create(s, patient(v))
    const url = `Patient?identifier=${encodeURIComponent(`http://example.org/tx-test|${v}`)}`
    const { alone, inBundle } = await sameBothWays(() => s.fhirFetch(`/${url}`, { method: 'DELETE' }), del(url), 412, 'HAPI-0962')
    expect(alone).toContain('because this search matched 3 resources')
    expect(inBundle).toContain('because this search matched 3 resources')
  })
})
