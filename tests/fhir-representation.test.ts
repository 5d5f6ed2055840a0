// How writes and reads represent the resource: Prefer: return=minimal|representation|OperationOutcome,
// _pretty, _summary and _elements (with the SUBSETTED tag). https://hl7.org/fhir/R4/http.html#ins-req
// (reference behaviour: shared/notes/hapi-behaviour.md §1.4)
import { beforeAll, describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'
import { outcomeText, storageCode, writes } from './write-expect'

const s = useTestServer()

const { create, put, versionRows } = writes(s)

describe('Prefer: return=', () => {
  test('default is the representation', async () => {
    const res = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true } })
    expect(res.status).toBe(201)
    const body = await readJson(res)
    expect(body.resourceType).toBe('Patient')
    expect(body.active).toBe(true)
  })

  test('return=representation: the stored resource', async () => {
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      json: { resourceType: 'Patient', active: true },
      headers: { prefer: 'return=representation' },
    })
    expect(res.status).toBe(201)
    expect((await readJson(res)).meta.versionId).toBe('1')
  })

  test('return=minimal: empty body, headers as usual', async () => {
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      json: { resourceType: 'Patient', active: true },
      headers: { prefer: 'return=minimal' },
    })
    expect(res.status).toBe(201)
    expect(await res.text()).toBe('')
    expect(res.headers.get('etag')).toBe('W/"1"')
    expect(res.headers.get('location')).toMatch(/\/fhir\/Patient\/[0-9]+\/_history\/1$/)
    expect(res.headers.get('last-modified')).not.toBeNull()
    const id = (res.headers.get('location') as string).split('/').at(-3)
    const upd = await s.fhirFetch(`/Patient/${id}`, {
      method: 'PUT',
      json: { resourceType: 'Patient', id, active: false },
      headers: { prefer: 'return=minimal' },
    })
    expect(upd.status).toBe(200)
    expect(await upd.text()).toBe('')
    expect(upd.headers.get('etag')).toBe('W/"2"')
  })

  test('return=OperationOutcome: SUCCESSFUL_CREATE, SUCCESSFUL_UPDATE, SUCCESSFUL_UPDATE_NO_CHANGE', async () => {
    const prefer = { prefer: 'return=OperationOutcome' }
    const created = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true }, headers: prefer })
    expect(created.status).toBe(201)
    expect(created.headers.get('etag')).toBe('W/"1"')
    expect(storageCode((await outcomeText(created)).body)).toBe('SUCCESSFUL_CREATE')
    const id = (created.headers.get('location') as string).split('/').at(-3)

    const updated = await s.fhirFetch(`/Patient/${id}`, { method: 'PUT', json: { resourceType: 'Patient', id, active: false }, headers: prefer })
    expect(updated.status).toBe(200)
    expect(storageCode((await outcomeText(updated)).body)).toBe('SUCCESSFUL_UPDATE')

    const same = await s.fhirFetch(`/Patient/${id}`, { method: 'PUT', json: { resourceType: 'Patient', id, active: false }, headers: prefer })
    expect(same.status).toBe(200)
    expect(storageCode((await outcomeText(same)).body)).toBe('SUCCESSFUL_UPDATE_NO_CHANGE')
  })

  test('return=OperationOutcome on update as create: SUCCESSFUL_UPDATE_AS_CREATE', async () => {
    const res = await s.fhirFetch('/Patient/prefer-oo', {
      method: 'PUT',
      json: { resourceType: 'Patient', id: 'prefer-oo' },
      headers: { prefer: 'return=OperationOutcome' },
    })
    expect(res.status).toBe(201)
    expect(storageCode((await outcomeText(res)).body)).toBe('SUCCESSFUL_UPDATE_AS_CREATE')
  })
})

describe('_pretty, _summary and _elements on reads', () => {
  const SUBSETTED = 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue|SUBSETTED'
  let p: any

  const hasSubsetted = (r: any) => (r.meta?.tag ?? []).some((t: any) => `${t.system}|${t.code}` === SUBSETTED)

  beforeAll(async () => {
    p = await create({
      resourceType: 'Patient',
      text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">Jane Doe</div>' },
      name: [{ family: 'Doe', given: ['Jane'] }],
      birthDate: '1990-05-05',
      maritalStatus: { text: 'married' },
      communication: [{ language: { text: 'English' } }],
    })
  })

  test('_pretty=true gives indented JSON, _pretty=false compact JSON', async () => {
    const pretty = await (await s.fhirFetch(`/Patient/${p.id}?_pretty=true`)).text()
    expect(pretty).toContain('\n  "resourceType": "Patient"')
    expect(JSON.parse(pretty)).toEqual(p)
    const compact = await (await s.fhirFetch(`/Patient/${p.id}?_pretty=false`)).text()
    expect(compact).not.toContain('\n')
    expect(JSON.parse(compact)).toEqual(p)
  })

  test('_summary=true keeps summary elements, id and meta, adds SUBSETTED', async () => {
    const res = await s.fhirFetch(`/Patient/${p.id}?_summary=true`)
    expect(res.status).toBe(200)
    const body = await readJson(res)
    expect(body.id).toBe(p.id)
    expect(body.meta.versionId).toBe('1')
    expect(hasSubsetted(body)).toBe(true)
    expect(body.name).toEqual(p.name)
    expect(body.birthDate).toBe('1990-05-05')
    expect(body.maritalStatus).toBeUndefined()
    expect(body.communication).toBeUndefined()
    expect(body.text).toBeUndefined()
  })

  test('_summary=text keeps text, id and meta only', async () => {
    const body = await readJson(await s.fhirFetch(`/Patient/${p.id}?_summary=text`))
    expect(body.id).toBe(p.id)
    expect(body.text).toEqual(p.text)
    expect(hasSubsetted(body)).toBe(true)
    expect(body.name).toBeUndefined()
    expect(body.birthDate).toBeUndefined()
  })

  test('_summary=data removes text and keeps the rest', async () => {
    const body = await readJson(await s.fhirFetch(`/Patient/${p.id}?_summary=data`))
    expect(body.text).toBeUndefined()
    expect(body.name).toEqual(p.name)
    expect(body.maritalStatus).toEqual(p.maritalStatus)
    expect(hasSubsetted(body)).toBe(true)
  })

  test('_elements=name keeps name, id and meta and drops the rest', async () => {
    const body = await readJson(await s.fhirFetch(`/Patient/${p.id}?_elements=name`))
    expect(body.id).toBe(p.id)
    expect(body.meta.versionId).toBe('1')
    expect(body.name).toEqual(p.name)
    expect(body.birthDate).toBeUndefined()
    expect(body.maritalStatus).toBeUndefined()
    expect(body.communication).toBeUndefined()
    expect(hasSubsetted(body)).toBe(true)
  })

  test('a subsetted read leaves the stored resource whole', async () => {
    const body = await readJson(await s.fhirFetch(`/Patient/${p.id}`))
    expect(body).toEqual(p)
    expect(hasSubsetted(body)).toBe(false)
  })

  test('_summary together with _elements: 400', async () => {
    const res = await s.fhirFetch(`/Patient/${p.id}?_summary=true&_elements=name`)
    expect(res.status).toBe(400)
    await outcomeText(res)
  })

  test('an invalid _summary value: 400', async () => {
    const res = await s.fhirFetch(`/Patient/${p.id}?_summary=bogus`)
    expect(res.status).toBe(400)
    await outcomeText(res)
  })

  test('writing a resource that carries the SUBSETTED tag: 400, nothing written', async () => {
    const subsetted = { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED' }
    const [{ n: before }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource`
    const post = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', meta: { tag: [subsetted] } } })
    expect(post.status).toBe(400)
    await outcomeText(post)
    const putRes = await put({ resourceType: 'Patient', id: p.id, meta: { tag: [subsetted] }, name: [{ family: 'X' }] })
    expect(putRes.status).toBe(400)
    await outcomeText(putRes)
    const [{ n: after }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource`
    expect(after).toBe(before)
    expect(await versionRows('Patient', p.id)).toEqual([1])
  })
})
