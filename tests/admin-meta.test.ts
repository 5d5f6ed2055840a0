// $meta, $meta-add, $meta-delete as HAPI FHIR JPA 7.0 (notes/hapi-behaviour.md §3.4): Parameters with
// `return` (valueMeta) at every level; add and delete change the stored meta of a version in place (no new
// version) and, for the current version, what _tag/_security/_profile searches find.
import { beforeAll, describe, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { parseFhirXml } from '../shared/fhir/format/xml-parse'
import { readJson, useTestServer } from './harness'
import { writes } from './write-expect'

const s = useTestServer()
const { create, put, versionRows } = writes(s)

const TAGS = 'http://example.org/tags'
const CONF = 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality'
const P1 = 'http://example.org/StructureDefinition/p1'
const P2 = 'http://example.org/StructureDefinition/p2'

const metaParams = (meta: any) => ({ resourceType: 'Parameters', parameter: [{ name: 'meta', valueMeta: meta }] })

async function returned(res: Response): Promise<any> {
  const body = await readJson(res)
  expect(res.status).toBe(200)
  expect(body.resourceType).toBe('Parameters')
  expect(body.parameter).toHaveLength(1)
  expect(body.parameter[0].name).toBe('return')
  return body.parameter[0].valueMeta
}

const post = (path: string, body: any, key?: string) => s.fhirFetch(path, { method: 'POST', json: body, key })
const ids = async (query: string): Promise<string[]> => ((await readJson(await s.fhirFetch(query))).entry ?? []).map((e: any) => e.resource.id)

let patient: any

beforeAll(async () => {
  patient = await create({
    resourceType: 'Patient',
    meta: { profile: [P1], security: [{ system: CONF, code: 'R' }], tag: [{ system: TAGS, code: 'a', display: 'Tag A' }] },
    active: true,
  })
  await create({ resourceType: 'Patient', meta: { tag: [{ system: TAGS, code: 'other' }] } })
  await create({
    resourceType: 'Observation',
    meta: { tag: [{ system: TAGS, code: 'obs', display: 'Observation tag' }] },
    status: 'final',
    code: { text: 'x' },
  })
})

describe('$meta', () => {
  test('instance level: versionId, lastUpdated, profiles, security labels, tags', async () => {
    const meta = await returned(await s.fhirFetch(`/Patient/${patient.id}/$meta`))
    expect(meta).toEqual({
      versionId: '1',
      lastUpdated: patient.meta.lastUpdated,
      profile: [P1],
      security: [{ system: CONF, code: 'R' }],
      tag: [{ system: TAGS, code: 'a', display: 'Tag A' }],
    })
    // POST answers the same.
    expect(await returned(await post(`/Patient/${patient.id}/$meta`, { resourceType: 'Parameters' }))).toEqual(meta)
  })

  test('type level: the union in use by that type, with displays', async () => {
    const meta = await returned(await s.fhirFetch('/Patient/$meta'))
    expect(meta).toEqual({
      profile: [P1],
      security: [{ system: CONF, code: 'R' }],
      tag: [
        { system: TAGS, code: 'a', display: 'Tag A' },
        { system: TAGS, code: 'other' },
      ],
    })
  })

  test('system level: the union over every type', async () => {
    const meta = await returned(await s.fhirFetch('/$meta'))
    expect(meta.tag).toEqual([
      { system: TAGS, code: 'a', display: 'Tag A' },
      { system: TAGS, code: 'obs', display: 'Observation tag' },
      { system: TAGS, code: 'other' },
    ])
  })

  test('unknown resource or version: 404; a deleted resource: 410', async () => {
    expect((await s.fhirFetch('/Patient/nope/$meta')).status).toBe(404)
    expect((await s.fhirFetch(`/Patient/${patient.id}/_history/9/$meta`)).status).toBe(404)
    const gone = await create({ resourceType: 'Patient', meta: { tag: [{ system: TAGS, code: 'gone' }] } })
    expect((await s.fhirFetch(`/Patient/${gone.id}`, { method: 'DELETE' })).status).toBe(200)
    expect((await s.fhirFetch(`/Patient/${gone.id}/$meta`)).status).toBe(410)
    expect((await post(`/Patient/${gone.id}/$meta-add`, metaParams({ tag: [{ system: TAGS, code: 'x' }] }))).status).toBe(410)
    // Its version 1 still has content.
    expect((await returned(await s.fhirFetch(`/Patient/${gone.id}/_history/1/$meta`))).tag).toEqual([{ system: TAGS, code: 'gone' }])
  })

  test('XML: the Parameters with valueMeta in FHIR XML', async () => {
    const res = await s.fhirFetch(`/Patient/${patient.id}/$meta?_format=xml`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/fhir+xml')
    const text = await res.text()
    expect(text).toContain('<valueMeta>')
    const p = parseFhirXml(text)
    expect(p.parameter[0].valueMeta.profile).toEqual([P1])
    expect(p.parameter[0].valueMeta.tag[0]).toEqual({ system: TAGS, code: 'a', display: 'Tag A' })
  })
})

describe('$meta-add and $meta-delete', () => {
  test('add: tags, security and profiles merged into the current version, no new version, searchable', async () => {
    const p = await create({ resourceType: 'Patient', meta: { tag: [{ system: TAGS, code: 'a' }] }, active: true })
    expect(await ids(`/Patient?_tag=${TAGS}|b`)).toEqual([])
    const meta = await returned(
      await post(
        `/Patient/${p.id}/$meta-add`,
        metaParams({
          tag: [
            { system: TAGS, code: 'b', display: 'B' },
            { system: TAGS, code: 'a', display: 'ignored' },
          ],
          security: [{ system: CONF, code: 'N' }],
          profile: [P2],
        }),
      ),
    )
    expect(meta).toEqual({
      versionId: '1',
      lastUpdated: p.meta.lastUpdated,
      profile: [P2],
      security: [{ system: CONF, code: 'N' }],
      tag: [
        { system: TAGS, code: 'a' },
        { system: TAGS, code: 'b', display: 'B' },
      ],
    })
    const read = await readJson(await s.fhirFetch(`/Patient/${p.id}`))
    expect(read.meta).toEqual({ versionId: '1', lastUpdated: p.meta.lastUpdated, ...{ tag: meta.tag, security: meta.security, profile: meta.profile } })
    expect(read.active).toBe(true)
    expect(await versionRows('Patient', p.id)).toEqual([1])
    expect(await ids(`/Patient?_tag=${TAGS}|b`)).toEqual([p.id])
    expect(await ids(`/Patient?_security=${CONF}|N`)).toEqual([p.id])
    expect(await ids(`/Patient?_profile=${P2}`)).toEqual([p.id])
    // _content sees the new tag's text too (every index row is recomputed).
    expect(await ids('/Patient?_content=B')).toContain(p.id)
  })

  test('delete: removes matching tags, security labels and profiles; searches stop finding them', async () => {
    const p = await create({
      resourceType: 'Patient',
      meta: {
        profile: [P1, P2],
        security: [{ system: CONF, code: 'V' }],
        tag: [
          { system: TAGS, code: 'keep' },
          { system: TAGS, code: 'drop' },
        ],
      },
    })
    expect(await ids(`/Patient?_tag=${TAGS}|drop`)).toEqual([p.id])
    const meta = await returned(
      await post(
        `/Patient/${p.id}/$meta-delete`,
        metaParams({ tag: [{ system: TAGS, code: 'drop' }], security: [{ system: CONF, code: 'V' }], profile: [P1] }),
      ),
    )
    expect(meta).toEqual({ versionId: '1', lastUpdated: p.meta.lastUpdated, profile: [P2], tag: [{ system: TAGS, code: 'keep' }] })
    expect((await readJson(await s.fhirFetch(`/Patient/${p.id}`))).meta.security).toBeUndefined()
    expect(await ids(`/Patient?_tag=${TAGS}|drop`)).toEqual([])
    expect(await ids(`/Patient?_security=${CONF}|V`)).toEqual([])
    expect(await ids(`/Patient?_tag=${TAGS}|keep`)).toEqual([p.id])
    expect(await versionRows('Patient', p.id)).toEqual([1])
  })

  test('version level: an earlier version changes in place; the current one and its index rows do not', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    expect((await put({ ...p, active: false })).status).toBe(200)
    const meta = await returned(await post(`/Patient/${p.id}/_history/1/$meta-add`, metaParams({ tag: [{ system: TAGS, code: 'v1only' }] })))
    expect(meta.versionId).toBe('1')
    expect(meta.tag).toEqual([{ system: TAGS, code: 'v1only' }])
    expect((await readJson(await s.fhirFetch(`/Patient/${p.id}/_history/1`))).meta.tag).toEqual([{ system: TAGS, code: 'v1only' }])
    const current = await readJson(await s.fhirFetch(`/Patient/${p.id}`))
    expect(current.meta.tag).toBeUndefined()
    expect(current.meta.versionId).toBe('2')
    expect(await ids(`/Patient?_tag=${TAGS}|v1only`)).toEqual([])
    expect(await versionRows('Patient', p.id)).toEqual([1, 2])
    // The current version named by number is the current row.
    await returned(await post(`/Patient/${p.id}/_history/2/$meta-add`, metaParams({ tag: [{ system: TAGS, code: 'v2' }] })))
    expect(await ids(`/Patient?_tag=${TAGS}|v2`)).toEqual([p.id])
    expect((await returned(await s.fhirFetch(`/Patient/${p.id}/_history/1/$meta`))).tag).toEqual([{ system: TAGS, code: 'v1only' }])
  })

  test('no meta parameter: 400 HAPI-0554 (add) and HAPI-0555 (delete); unknown resource 404', async () => {
    const add = await post(`/Patient/${patient.id}/$meta-add`, { resourceType: 'Parameters' })
    expect(add.status).toBe(400)
    expect(JSON.stringify(await readJson(add))).toContain('HAPI-0554')
    const del = await post(`/Patient/${patient.id}/$meta-delete`, { resourceType: 'Parameters', parameter: [{ name: 'other', valueString: 'x' }] })
    expect(del.status).toBe(400)
    expect(JSON.stringify(await readJson(del))).toContain('HAPI-0555')
    expect((await post('/Patient/nope/$meta-add', metaParams({ tag: [{ code: 'x' }] }))).status).toBe(404)
  })

  test('POST only, and only at instance and version level', async () => {
    expect((await s.fhirFetch(`/Patient/${patient.id}/$meta-add`)).status).toBe(405)
    expect((await post('/Patient/$meta-add', metaParams({ tag: [{ code: 'x' }] }))).status).toBe(400)
  })

  test('scopes: $meta, $meta-add and $meta-delete are administrative operations (admin scope); read and write keys get 403', async () => {
    const { key: reader } = await createApiKey(s.sql, 'meta-reader', ['read'])
    const { key: writer } = await createApiKey(s.sql, 'meta-writer', ['read', 'write'])
    for (const key of [reader, writer]) {
      expect((await s.fhirFetch(`/Patient/${patient.id}/$meta`, { key })).status).toBe(403)
      expect((await s.fhirFetch('/$meta', { key })).status).toBe(403)
      expect((await post(`/Patient/${patient.id}/$meta-add`, metaParams({ tag: [{ system: TAGS, code: 'r' }] }), key)).status).toBe(403)
      expect((await post(`/Patient/${patient.id}/$meta-delete`, metaParams({ tag: [{ system: TAGS, code: 'r' }] }), key)).status).toBe(403)
    }
    expect((await returned(await s.fhirFetch(`/Patient/${patient.id}/$meta`))).tag).toHaveLength(1)
    await returned(await post(`/Patient/${patient.id}/$meta-add`, metaParams({ tag: [{ system: TAGS, code: 'w' }] })))
    await returned(await post(`/Patient/${patient.id}/$meta-delete`, metaParams({ tag: [{ system: TAGS, code: 'w' }] })))
    expect((await returned(await s.fhirFetch(`/Patient/${patient.id}/$meta`))).tag).toHaveLength(1)
  })
})
