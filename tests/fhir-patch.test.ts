// PATCH /{type}/{id} with FHIR Patch (a Parameters resource) and JSON Patch.
// https://hl7.org/fhir/R4/http.html#patch  https://hl7.org/fhir/R4/fhirpatch.html
import { describe, expect, test } from 'bun:test'
import { createResource, readJson, useTestServer } from './harness'

const s = useTestServer()

const STORAGE_CODES = 'https://hapifhir.io/fhir/CodeSystem/hapi-fhir-storage-response-code'

const create = (resource: any) => createResource(s, resource)

function fhirPatch(...operations: Record<string, unknown>[]): any {
  return {
    resourceType: 'Parameters',
    parameter: operations.map((op) => ({
      name: 'operation',
      part: Object.entries(op).map(([name, value]) =>
        name === 'type' ? { name, valueCode: value } : name === 'path' || name === 'name' ? { name, valueString: value } : { name, ...(value as object) },
      ),
    })),
  }
}

function jsonPatch(id: string, ops: unknown[], headers: Record<string, string> = {}): Promise<Response> {
  return s.fhirFetch(`/Patient/${id}`, {
    method: 'PATCH',
    body: JSON.stringify(ops),
    headers: { 'content-type': 'application/json-patch+json', ...headers },
  })
}

async function versions(type: string, id: string): Promise<number[]> {
  const rows = await s.sql<{ version: number }[]>`
    select version from resource where res_type = ${type} and id = ${id}
    union all
    select version from resource_history where res_type = ${type} and id = ${id}
    order by version`
  return rows.map((r) => r.version)
}

async function outcome(res: Response): Promise<any> {
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  return body
}

describe('FHIR Patch', () => {
  test('replace birthDate: 200, version 2', async () => {
    const p = await create({ resourceType: 'Patient', birthDate: '1950-01-01', name: [{ family: 'Patchy' }] })
    const res = await s.fhirFetch(`/Patient/${p.id}`, {
      method: 'PATCH',
      json: fhirPatch({ type: 'replace', path: 'Patient.birthDate', value: { valueDate: '1960-02-02' } }),
    })
    expect(res.status).toBe(200)
    const body = await readJson(res)
    expect(body.birthDate).toBe('1960-02-02')
    expect(body.meta.versionId).toBe('2')
    expect(body.name).toEqual([{ family: 'Patchy' }])
    expect(res.headers.get('content-location')).toEndWith(`/fhir/Patient/${p.id}/_history/2`)
    const read = await readJson(await s.fhirFetch(`/Patient/${p.id}`))
    expect(read.birthDate).toBe('1960-02-02')
    expect(await versions('Patient', p.id)).toEqual([1, 2])
  })

  test('Prefer: return=OperationOutcome gives SUCCESSFUL_PATCH', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    const res = await s.fhirFetch(`/Patient/${p.id}`, {
      method: 'PATCH',
      json: fhirPatch({ type: 'replace', path: 'Patient.active', value: { valueBoolean: false } }),
      headers: { prefer: 'return=OperationOutcome' },
    })
    expect(res.status).toBe(200)
    const oo = await outcome(res)
    expect(oo.issue[0].details.coding.find((c: any) => c.system === STORAGE_CODES)?.code).toBe('SUCCESSFUL_PATCH')
  })

  test('a patch that changes nothing: 200, same version', async () => {
    const p = await create({ resourceType: 'Patient', birthDate: '1950-01-01' })
    const res = await s.fhirFetch(`/Patient/${p.id}`, {
      method: 'PATCH',
      json: fhirPatch({ type: 'replace', path: 'Patient.birthDate', value: { valueDate: '1950-01-01' } }),
    })
    expect(res.status).toBe(200)
    expect((await readJson(res)).meta.versionId).toBe('1')
    expect(await versions('Patient', p.id)).toEqual([1])
  })

  test('a patch whose path matches nothing to replace: 400, no new version', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    const res = await s.fhirFetch(`/Patient/${p.id}`, {
      method: 'PATCH',
      json: fhirPatch({ type: 'replace', path: 'Patient.birthDate', value: { valueDate: '1960-02-02' } }),
    })
    expect(res.status).toBe(400)
    await outcome(res)
    expect(await versions('Patient', p.id)).toEqual([1])
  })

  test('an unknown operation type: 400, no new version', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    const res = await s.fhirFetch(`/Patient/${p.id}`, {
      method: 'PATCH',
      json: fhirPatch({ type: 'transmogrify', path: 'Patient.active', value: { valueBoolean: false } }),
    })
    expect(res.status).toBe(400)
    await outcome(res)
    expect(await versions('Patient', p.id)).toEqual([1])
  })

  test('a patch that produces an invalid resource: 400, no new version', async () => {
    const p = await create({ resourceType: 'Patient', gender: 'male' })
    const res = await s.fhirFetch(`/Patient/${p.id}`, {
      method: 'PATCH',
      json: fhirPatch({ type: 'replace', path: 'Patient.gender', value: { valueCode: 'banana' } }),
    })
    expect(res.status).toBe(400)
    await outcome(res)
    expect(await versions('Patient', p.id)).toEqual([1])
  })
})

describe('JSON Patch', () => {
  test('application/json-patch+json replace: 200, version 2', async () => {
    const p = await create({ resourceType: 'Patient', birthDate: '1950-01-01' })
    const res = await jsonPatch(p.id, [{ op: 'replace', path: '/birthDate', value: '1970-03-03' }])
    expect(res.status).toBe(200)
    const body = await readJson(res)
    expect(body.birthDate).toBe('1970-03-03')
    expect(body.meta.versionId).toBe('2')
    expect(await versions('Patient', p.id)).toEqual([1, 2])
  })

  test('a failing test op: 400, no new version', async () => {
    const p = await create({ resourceType: 'Patient', birthDate: '1950-01-01' })
    const res = await jsonPatch(p.id, [
      { op: 'test', path: '/birthDate', value: '1999-09-09' },
      { op: 'replace', path: '/birthDate', value: '1970-03-03' },
    ])
    expect(res.status).toBe(400)
    await outcome(res)
    expect(await versions('Patient', p.id)).toEqual([1])
  })

  test('a malformed JSON Patch document: 400, no new version', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    const res = await jsonPatch(p.id, [{ op: 'replace' }] as unknown[])
    expect(res.status).toBe(400)
    await outcome(res)
    expect(await versions('Patient', p.id)).toEqual([1])
  })

  test('a JSON Patch that produces an invalid resource: 400, no new version', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    const res = await jsonPatch(p.id, [{ op: 'add', path: '/birthDate', value: 'not-a-date' }])
    expect(res.status).toBe(400)
    await outcome(res)
    expect(await versions('Patient', p.id)).toEqual([1])
  })

  test('a JSON Patch that changes nothing: 200, same version', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    const res = await jsonPatch(p.id, [{ op: 'replace', path: '/active', value: true }])
    expect(res.status).toBe(200)
    expect((await readJson(res)).meta.versionId).toBe('1')
    expect(await versions('Patient', p.id)).toEqual([1])
  })
})

describe('patch preconditions', () => {
  test('patch of an unknown resource: 404', async () => {
    const res = await jsonPatch('no-such-patient', [{ op: 'replace', path: '/active', value: true }])
    expect(res.status).toBe(404)
    await outcome(res)
  })

  test('patch of a deleted resource: 410', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBe(200)
    const res = await jsonPatch(p.id, [{ op: 'replace', path: '/active', value: false }])
    expect(res.status).toBe(410)
    await outcome(res)
    expect(await versions('Patient', p.id)).toEqual([1, 2])
  })

  test('If-Match current: 200; stale: 409 HAPI-0974, no new version', async () => {
    const p = await create({ resourceType: 'Patient', active: true })
    const ok = await jsonPatch(p.id, [{ op: 'replace', path: '/active', value: false }], { 'if-match': 'W/"1"' })
    expect(ok.status).toBe(200)
    const stale = await jsonPatch(p.id, [{ op: 'replace', path: '/active', value: true }], { 'if-match': 'W/"1"' })
    expect(stale.status).toBe(409)
    const oo = await outcome(stale)
    expect(oo.issue.map((i: any) => i.diagnostics).join('\n')).toContain('HAPI-0974')
    expect(await versions('Patient', p.id)).toEqual([1, 2])
  })
})
