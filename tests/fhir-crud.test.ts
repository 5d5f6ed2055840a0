// create, read, vread, update and delete over HTTP, as HAPI FHIR JPA 7.0 answers them.
// https://hl7.org/fhir/R4/http.html  (reference behaviour: shared/notes/hapi-behaviour.md §1.1, §1.2)
import { beforeAll, describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'
import { outcomeText, storageCode, writes } from './write-expect'

const s = useTestServer()

const { create, put, versionRows } = writes(s)

describe('create POST /{type}', () => {
  test('201 with Location, Content-Location, ETag, Last-Modified and a server-assigned numeric id', async () => {
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      json: { resourceType: 'Patient', id: 'client-chosen', name: [{ family: 'Smith' }] },
    })
    expect(res.status).toBe(201)
    const body = await readJson(res)
    expect(body.resourceType).toBe('Patient')
    expect(body.id).toMatch(/^[0-9]+$/)
    expect(body.id).not.toBe('client-chosen')
    expect(body.meta.versionId).toBe('1')
    expect(Number.isNaN(Date.parse(body.meta.lastUpdated))).toBe(false)
    expect(body.name).toEqual([{ family: 'Smith' }])
    expect(res.headers.get('etag')).toBe('W/"1"')
    const lastModified = res.headers.get('last-modified')
    expect(lastModified).not.toBeNull()
    // Last-Modified is meta.lastUpdated as an HTTP date (second precision).
    expect(Date.parse(lastModified as string)).toBe(Math.floor(Date.parse(body.meta.lastUpdated) / 1000) * 1000)
  })

  test('Location and Content-Location are {base}/fhir/{type}/{id}/_history/1', async () => {
    const res = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true } })
    expect(res.status).toBe(201)
    const body = await readJson(res)
    expect(res.headers.get('location')).toBe(`${s.fhir}/Patient/${body.id}/_history/1`)
    expect(res.headers.get('content-location')).toBe(`${s.fhir}/Patient/${body.id}/_history/1`)
  })

  test('the body id is ignored and the created resource reads back under the server id', async () => {
    const body = await create({ resourceType: 'Patient', id: 'ignored-id', gender: 'female' })
    const byServerId = await s.fhirFetch(`/Patient/${body.id}`)
    expect(byServerId.status).toBe(200)
    expect((await s.fhirFetch('/Patient/ignored-id')).status).toBe(404)
  })

  test('meta.tag, meta.security and meta.profile come back sorted (HAPI 7.0)', async () => {
    const body = await create({
      resourceType: 'Patient',
      meta: {
        profile: ['http://example.org/StructureDefinition/z', 'http://example.org/StructureDefinition/a'],
        tag: [
          { system: 'http://example.org/tags-b', code: 'b1' },
          { system: 'http://example.org/tags-a', code: 'a2' },
          { system: 'http://example.org/tags-a', code: 'a1' },
        ],
        security: [
          { system: 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality', code: 'R' },
          { system: 'http://terminology.hl7.org/CodeSystem/v3-ActReason', code: 'HTEST' },
        ],
      },
    })
    expect(body.meta.profile).toEqual(['http://example.org/StructureDefinition/a', 'http://example.org/StructureDefinition/z'])
    expect(body.meta.tag.map((t: any) => `${t.system}|${t.code}`)).toEqual([
      'http://example.org/tags-a|a1',
      'http://example.org/tags-a|a2',
      'http://example.org/tags-b|b1',
    ])
    expect(body.meta.security.map((t: any) => t.code)).toEqual(['HTEST', 'R'])
  })

  test('meta.versionId and meta.lastUpdated sent by the client are overridden', async () => {
    const body = await create({ resourceType: 'Patient', meta: { versionId: '42', lastUpdated: '2001-01-01T00:00:00Z' } })
    expect(body.meta.versionId).toBe('1')
    expect(body.meta.lastUpdated).not.toBe('2001-01-01T00:00:00Z')
  })
})

describe('read GET /{type}/{id}', () => {
  let patient: any

  beforeAll(async () => {
    patient = await create({ resourceType: 'Patient', name: [{ family: 'Reader' }], birthDate: '1970-01-01' })
  })

  test('200 with ETag and Last-Modified and the stored resource', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('W/"1"')
    expect(res.headers.get('last-modified')).not.toBeNull()
    expect(await readJson(res)).toEqual(patient)
  })

  test('unknown id: 404 OperationOutcome with HAPI-2001', async () => {
    const res = await s.fhirFetch('/Patient/does-not-exist')
    expect(res.status).toBe(404)
    const { body, diagnostics } = await outcomeText(res)
    expect(body.issue[0].severity).toBe('error')
    expect(body.issue[0].code).toBe('processing') // HAPI: ResourceNotFoundException
    expect(diagnostics).toContain('HAPI-2001')
  })

  test('unknown resource type: 404 OperationOutcome with HAPI-0302', async () => {
    const res = await s.fhirFetch('/NotAType/1')
    expect(res.status).toBe(404)
    expect((await outcomeText(res)).diagnostics).toContain('HAPI-0302')
  })

  test('deleted resource: 410 Gone with an OperationOutcome', async () => {
    const p = await create({ resourceType: 'Patient', active: false })
    expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBe(200)
    const res = await s.fhirFetch(`/Patient/${p.id}`)
    expect(res.status).toBe(410)
    // HAPI's words, with no HAPI-NNNN code (BaseStorageDao.createResourceGoneException).
    expect((await outcomeText(res)).diagnostics).toMatch(/^Resource was deleted at \d{4}-\d\d-\d\dT[0-9:.]+Z$/)
  })

  test('If-None-Match with the current ETag: 304 with no body', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}`, { headers: { 'if-none-match': 'W/"1"' } })
    expect(res.status).toBe(304)
    expect(await res.text()).toBe('')
  })

  test('If-None-Match with another version: 200', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}`, { headers: { 'if-none-match': 'W/"7"' } })
    expect(res.status).toBe(200)
  })

  test('If-Modified-Since in the future: 304; in the past: 200', async () => {
    const future = new Date(Date.now() + 24 * 3600 * 1000).toUTCString()
    const res = await s.fhirFetch(`/Patient/${patient.id}`, { headers: { 'if-modified-since': future } })
    expect(res.status).toBe(304)
    expect(await res.text()).toBe('')
    const past = new Date('2000-01-01T00:00:00Z').toUTCString()
    expect((await s.fhirFetch(`/Patient/${patient.id}`, { headers: { 'if-modified-since': past } })).status).toBe(200)
  })

  test('_count on a read: 400 HAPI-0384', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}?_count=5`)
    expect(res.status).toBe(400)
    expect((await outcomeText(res)).diagnostics).toContain('HAPI-0384')
  })

  test('HEAD: 200 with ETag and no body', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}`, { method: 'HEAD' })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('W/"1"')
    expect(await res.text()).toBe('')
  })

  test('HEAD of an unknown id: 404', async () => {
    const res = await s.fhirFetch('/Patient/nobody-here', { method: 'HEAD' })
    expect(res.status).toBe(404)
  })
})

describe('vread GET /{type}/{id}/_history/{vid}', () => {
  let id: string

  beforeAll(async () => {
    id = (await create({ resourceType: 'Patient', birthDate: '1980-01-01' })).id
    expect((await put({ resourceType: 'Patient', id, birthDate: '1980-01-02' })).status).toBe(200)
    expect((await s.fhirFetch(`/Patient/${id}`, { method: 'DELETE' })).status).toBe(200)
  })

  test('each live version: 200 with its content and ETag', async () => {
    const v1 = await s.fhirFetch(`/Patient/${id}/_history/1`)
    expect(v1.status).toBe(200)
    expect(v1.headers.get('etag')).toBe('W/"1"')
    const b1 = await readJson(v1)
    expect(b1.birthDate).toBe('1980-01-01')
    expect(b1.meta.versionId).toBe('1')
    const v2 = await s.fhirFetch(`/Patient/${id}/_history/2`)
    expect(v2.status).toBe(200)
    expect((await readJson(v2)).birthDate).toBe('1980-01-02')
  })

  test('unknown version: 404 HAPI-0979', async () => {
    const res = await s.fhirFetch(`/Patient/${id}/_history/99`)
    expect(res.status).toBe(404)
    expect((await outcomeText(res)).diagnostics).toContain('HAPI-0979')
  })

  // HAPI: BaseHapiFhirResourceDao.readEntity (isVersionIdPartValidLong), FhirResourceDaoR4Test.
  test('non-numeric version: 404 HAPI-0978', async () => {
    const res = await s.fhirFetch(`/Patient/${id}/_history/abc`)
    expect(res.status).toBe(404)
    expect((await outcomeText(res)).diagnostics).toBe(`HAPI-0978: Version "abc" is not valid for resource Patient/${id}`)
  })

  test('the deletion version: 410', async () => {
    const res = await s.fhirFetch(`/Patient/${id}/_history/3`)
    expect(res.status).toBe(410)
    await outcomeText(res)
  })

  test('vread of an unknown resource: 404', async () => {
    expect((await s.fhirFetch('/Patient/never-was/_history/1')).status).toBe(404)
  })
})

describe('update PUT /{type}/{id}', () => {
  test('200 with version 2, ETag, Content-Location and no Location', async () => {
    const p = await create({ resourceType: 'Patient', gender: 'male' })
    const res = await put({ resourceType: 'Patient', id: p.id, gender: 'female' })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('W/"2"')
    expect(res.headers.get('content-location')).toEndWith(`/fhir/Patient/${p.id}/_history/2`)
    expect(res.headers.get('location')).toBeNull()
    expect(res.headers.get('last-modified')).not.toBeNull()
    const body = await readJson(res)
    expect(body.meta.versionId).toBe('2')
    expect(body.gender).toBe('female')
    expect(await versionRows('Patient', p.id)).toEqual([1, 2])
  })

  test('an unchanged body: 200, same version, no new history row', async () => {
    const p = await create({ resourceType: 'Patient', gender: 'male', name: [{ family: 'Same' }] })
    const res = await put({ resourceType: 'Patient', id: p.id, gender: 'male', name: [{ family: 'Same' }] })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('W/"1"')
    const body = await readJson(res)
    expect(body.meta.versionId).toBe('1')
    expect(body.meta.lastUpdated).toBe(p.meta.lastUpdated)
    expect(await versionRows('Patient', p.id)).toEqual([1])
  })

  test('update as create with a client id: 201, version 1', async () => {
    const res = await put({ resourceType: 'Patient', id: 'abc', active: true })
    expect(res.status).toBe(201)
    expect(res.headers.get('etag')).toBe('W/"1"')
    expect(res.headers.get('content-location')).toEndWith('/fhir/Patient/abc/_history/1')
    const body = await readJson(res)
    expect(body.id).toBe('abc')
    expect(body.meta.versionId).toBe('1')
    expect((await s.fhirFetch('/Patient/abc')).status).toBe(200)
  })

  test('a purely numeric client id that does not exist: 400 HAPI-0960, nothing written', async () => {
    const res = await put({ resourceType: 'Patient', id: '987654321', active: true })
    expect(res.status).toBe(400)
    expect((await outcomeText(res)).diagnostics).toContain('HAPI-0960')
    expect(await versionRows('Patient', '987654321')).toEqual([])
  })

  test('no id in the body: 400 HAPI-0419', async () => {
    const res = await s.fhirFetch('/Patient/no-body-id', { method: 'PUT', json: { resourceType: 'Patient', active: true } })
    expect(res.status).toBe(400)
    expect((await outcomeText(res)).diagnostics).toContain('HAPI-0419')
  })

  test('body id differs from the URL id: 400 HAPI-0420', async () => {
    const res = await s.fhirFetch('/Patient/url-id', { method: 'PUT', json: { resourceType: 'Patient', id: 'body-id' } })
    expect(res.status).toBe(400)
    expect((await outcomeText(res)).diagnostics).toContain('HAPI-0420')
    expect(await versionRows('Patient', 'url-id')).toEqual([])
    expect(await versionRows('Patient', 'body-id')).toEqual([])
  })

  test('If-Match with the current version: 200', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    const res = await put({ resourceType: 'Patient', id: p.id, active: false }, { 'if-match': 'W/"1"' })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('W/"2"')
  })

  test('If-Match with a stale version: 409 HAPI-0989 (not 412), nothing written', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    expect((await put({ resourceType: 'Patient', id: p.id, active: false })).status).toBe(200)
    const res = await put({ resourceType: 'Patient', id: p.id, gender: 'other' }, { 'if-match': 'W/"1"' })
    expect(res.status).toBe(409)
    expect((await outcomeText(res)).diagnostics).toContain('HAPI-0989')
    expect(await versionRows('Patient', p.id)).toEqual([1, 2])
  })

  test('tags are additive: a tag of v1 stays in v2 when v2 sends none', async () => {
    const tag = { system: 'http://example.org/tags', code: 'keep-me' }
    const p = await create({ resourceType: 'Patient', meta: { tag: [tag] }, active: true })
    const res = await put({ resourceType: 'Patient', id: p.id, active: false })
    expect(res.status).toBe(200)
    const body = await readJson(res)
    expect(body.meta.versionId).toBe('2')
    expect(body.meta.tag).toContainEqual(tag)
    const read = await readJson(await s.fhirFetch(`/Patient/${p.id}`))
    expect(read.meta.tag).toContainEqual(tag)
  })

  test('update of a deleted resource creates a new version', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBe(200)
    const res = await put({ resourceType: 'Patient', id: p.id, active: false })
    expect([200, 201]).toContain(res.status)
    expect(res.headers.get('etag')).toBe('W/"3"')
    expect((await readJson(res)).meta.versionId).toBe('3')
    const read = await s.fhirFetch(`/Patient/${p.id}`)
    expect(read.status).toBe(200)
    expect((await readJson(read)).active).toBe(false)
    expect(await versionRows('Patient', p.id)).toEqual([1, 2, 3])
  })
})

describe('concurrent writes', () => {
  test('20 concurrent PUTs of one resource: all 200, history has exactly versions 1..21', async () => {
    const p = await create({ resourceType: 'Patient', name: [{ family: 'Concurrent' }] })
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => put({ resourceType: 'Patient', id: p.id, name: [{ family: `Concurrent-${i}` }] })))
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
    const etags = results.map((r) => r.headers.get('etag'))
    expect(new Set(etags).size).toBe(20)
    expect(await versionRows('Patient', p.id)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1))
    const history = await readJson(await s.fhirFetch(`/Patient/${p.id}/_history?_count=50`))
    const versions = history.entry.map((e: any) => Number(e.resource.meta.versionId)).sort((a: number, b: number) => a - b)
    expect(versions).toEqual(Array.from({ length: 21 }, (_, i) => i + 1))
    // Every body that was sent survives in exactly one version: no write was lost.
    const families = history.entry.map((e: any) => e.resource.name[0].family).filter((f: string) => f !== 'Concurrent')
    expect(new Set(families).size).toBe(20)
  })

  test('10 concurrent update-as-create of one new client id: one 201, the others 200', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => put({ resourceType: 'Patient', id: 'race-create', name: [{ family: `Race-${i}` }] })),
    )
    const statuses = results.map((r) => r.status).sort()
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201])
    expect(await versionRows('Patient', 'race-create')).toEqual(Array.from({ length: 10 }, (_, i) => i + 1))
  })
})

describe('delete DELETE /{type}/{id}', () => {
  test('200 with an OperationOutcome coded SUCCESSFUL_DELETE; the deletion is a new version', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    const res = await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })
    expect(res.status).toBe(200)
    const { body } = await outcomeText(res)
    expect(storageCode(body)).toBe('SUCCESSFUL_DELETE')
    expect(await versionRows('Patient', p.id)).toEqual([1, 2])
  })

  test('deleting again: 200 SUCCESSFUL_DELETE_ALREADY_DELETED, no new version', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBe(200)
    const res = await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })
    expect(res.status).toBe(200)
    expect(storageCode((await outcomeText(res)).body)).toBe('SUCCESSFUL_DELETE_ALREADY_DELETED')
    expect(await versionRows('Patient', p.id)).toEqual([1, 2])
  })

  test('deleting an id that never existed: 200 SUCCESSFUL_DELETE_NOT_FOUND, nothing written', async () => {
    const res = await s.fhirFetch('/Patient/never-existed', { method: 'DELETE' })
    expect(res.status).toBe(200)
    expect(storageCode((await outcomeText(res)).body)).toBe('SUCCESSFUL_DELETE_NOT_FOUND')
    expect(await versionRows('Patient', 'never-existed')).toEqual([])
  })

  test('If-Match with a stale version: 409, the resource stays', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    expect((await put({ resourceType: 'Patient', id: p.id, active: false })).status).toBe(200)
    const res = await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE', headers: { 'if-match': 'W/"1"' } })
    expect(res.status).toBe(409)
    await outcomeText(res)
    expect((await s.fhirFetch(`/Patient/${p.id}`)).status).toBe(200)
    expect(await versionRows('Patient', p.id)).toEqual([1, 2])
  })
})
