// Conditional create (If-None-Exist), update (PUT /{type}?query), delete (DELETE /{type}?query) and patch
// (PATCH /{type}?query) with HAPI's outcomes for 0, 1 and many matches, and delete's referential integrity.
// https://hl7.org/fhir/R4/http.html#ccreate  (reference behaviour: shared/notes/hapi-behaviour.md §1.1, §1.3)
import { describe, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { createResource, readJson, useTestServer } from './harness'

const s = useTestServer()

const STORAGE_CODES = 'https://hapifhir.io/fhir/CodeSystem/hapi-fhir-storage-response-code'
const SYS = 'http://example.org/mrn'

let seq = 0
/** An identifier value no other test uses. */
const unique = (label: string) => `${label}-${Date.now().toString(36)}-${++seq}`

const patient = (value: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Patient',
  identifier: [{ system: SYS, value }],
  ...extra,
})

function storageCode(outcome: any): string | undefined {
  return outcome.issue?.[0]?.details?.coding?.find((c: any) => c.system === STORAGE_CODES)?.code
}

async function diagnostics(res: Response): Promise<string> {
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  return body.issue.map((i: any) => i.diagnostics ?? '').join('\n')
}

async function count(type: string): Promise<number> {
  const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource where res_type = ${type}`
  return n
}

/** Current and historical versions of one resource. */
async function versions(type: string, id: string): Promise<number> {
  const [{ n }] = await s.sql<{ n: number }[]>`
    select (select count(*) from resource where res_type = ${type} and id = ${id})::int
         + (select count(*) from resource_history where res_type = ${type} and id = ${id})::int as n`
  return n
}

/** Current resources of `type` carrying the identifier value. */
async function withIdentifier(type: string, value: string): Promise<string[]> {
  const rows = await s.sql<{ id: string }[]>`
    select r.id from resource r
    where r.res_type = ${type} and not r.deleted
      and exists (select 1 from jsonb_array_elements(r.content::jsonb -> 'identifier') i where i ->> 'value' = ${value})
    order by r.id`
  return rows.map((r) => r.id)
}

const post = (resource: any, ifNoneExist: string, headers: Record<string, string> = {}) =>
  s.fhirFetch(`/${resource.resourceType}`, { method: 'POST', json: resource, headers: { 'if-none-exist': ifNoneExist, ...headers } })

const fhirPatch = (value: boolean) => ({
  resourceType: 'Parameters',
  parameter: [
    {
      name: 'operation',
      part: [
        { name: 'type', valueCode: 'replace' },
        { name: 'path', valueString: 'Patient.active' },
        { name: 'value', valueBoolean: value },
      ],
    },
  ],
})

describe('conditional create (If-None-Exist)', () => {
  test('no match: 201, a new resource, outcome SUCCESSFUL_CREATE_NO_CONDITIONAL_MATCH', async () => {
    const v = unique('cc-none')
    const res = await post(patient(v), `identifier=${SYS}|${v}`, { prefer: 'return=OperationOutcome' })
    expect(res.status).toBe(201)
    expect(res.headers.get('location')).toMatch(/\/Patient\/[0-9]+\/_history\/1$/)
    expect(storageCode(await readJson(res))).toBe('SUCCESSFUL_CREATE_NO_CONDITIONAL_MATCH')
    expect(await withIdentifier('Patient', v)).toHaveLength(1)
  })

  test('one match: 200 with the existing resource, its Location and ETag, and nothing written', async () => {
    const v = unique('cc-one')
    const existing = await createResource(s, patient(v, { active: true }))
    await s.fhirFetch(`/Patient/${existing.id}`, { method: 'PUT', json: { ...existing, active: false } }) // version 2
    const before = await count('Patient')
    const res = await post(patient(v, { gender: 'female' }), `identifier=${SYS}|${v}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('location')).toBe(`${s.fhir}/Patient/${existing.id}/_history/2`)
    expect(res.headers.get('etag')).toBe('W/"2"')
    const body = await readJson(res)
    expect(body.id).toBe(existing.id)
    expect(body.active).toBe(false)
    expect(body.gender).toBeUndefined()
    expect(await count('Patient')).toBe(before)
    expect(await versions('Patient', existing.id)).toBe(2)
  })

  test('one match with Prefer: return=OperationOutcome: SUCCESSFUL_CREATE_WITH_CONDITIONAL_MATCH', async () => {
    const v = unique('cc-oo')
    await createResource(s, patient(v))
    const res = await post(patient(v), `identifier=${SYS}|${v}`, { prefer: 'return=OperationOutcome' })
    expect(res.status).toBe(200)
    expect(storageCode(await readJson(res))).toBe('SUCCESSFUL_CREATE_WITH_CONDITIONAL_MATCH')
  })

  test('the match URL may carry the type: "Patient?identifier=..."', async () => {
    const v = unique('cc-typed')
    const existing = await createResource(s, patient(v))
    const res = await post(patient(v), `Patient?identifier=${SYS}|${v}`)
    expect(res.status).toBe(200)
    expect((await readJson(res)).id).toBe(existing.id)
  })

  test('a match URL for another type: 400 and nothing written', async () => {
    const v = unique('cc-othertype')
    const before = await count('Patient')
    const res = await post(patient(v), `Observation?identifier=${SYS}|${v}`)
    expect(res.status).toBe(400)
    await diagnostics(res)
    expect(await count('Patient')).toBe(before)
  })

  test('more than one match: 412 HAPI-0958 and nothing written', async () => {
    const v = unique('cc-many')
    await createResource(s, patient(v))
    await createResource(s, patient(v))
    const before = await count('Patient')
    const res = await post(patient(v), `identifier=${SYS}|${v}`)
    expect(res.status).toBe(412)
    expect(await diagnostics(res)).toStartWith('HAPI-0958: ')
    expect(await count('Patient')).toBe(before)
  })

  test('a resource that does not satisfy its own match URL: 400 HAPI-0929 and nothing written', async () => {
    const v = unique('cc-self')
    const before = await count('Patient')
    const res = await post(patient(v), `identifier=${SYS}|${v}-other`)
    expect(res.status).toBe(400)
    expect(await diagnostics(res)).toStartWith('HAPI-0929: ')
    expect(await count('Patient')).toBe(before)
    expect(await withIdentifier('Patient', v)).toEqual([])
  })

  test('an empty If-None-Exist: 400 and nothing written', async () => {
    const before = await count('Patient')
    for (const value of ['', 'Patient?', 'identifier=']) {
      const res = await post(patient(unique('cc-empty')), value)
      expect(res.status).toBe(400)
      expect(await diagnostics(res)).toStartWith('HAPI-0518: ')
    }
    expect(await count('Patient')).toBe(before)
  })

  test('an unknown parameter in the match URL: 400 HAPI-1223 and nothing written', async () => {
    const before = await count('Patient')
    const res = await post(patient(unique('cc-unknown')), 'nonsense=1')
    expect(res.status).toBe(400)
    expect(await diagnostics(res)).toStartWith('HAPI-1223: ')
    expect(await count('Patient')).toBe(before)
  })

  test('10 concurrent identical conditional creates: one 201, nine 200 with the same id, one resource', async () => {
    const v = unique('cc-race')
    const responses = await Promise.all(Array.from({ length: 10 }, () => post(patient(v), `identifier=${SYS}|${v}`)))
    const statuses = responses.map((r) => r.status).sort()
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201])
    const ids = new Set(await Promise.all(responses.map(async (r) => (await readJson(r)).id)))
    expect(ids.size).toBe(1)
    expect(await withIdentifier('Patient', v)).toEqual([...ids] as string[])
  })
})

describe('conditional update PUT /{type}?query', () => {
  test('no match, no id in the body: 201 with a server-assigned id, SUCCESSFUL_UPDATE_NO_CONDITIONAL_MATCH', async () => {
    const v = unique('cu-none')
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}`, { method: 'PUT', json: patient(v), headers: { prefer: 'return=OperationOutcome' } })
    expect(res.status).toBe(201)
    expect(storageCode(await readJson(res))).toBe('SUCCESSFUL_UPDATE_NO_CONDITIONAL_MATCH')
    const ids = await withIdentifier('Patient', v)
    expect(ids).toHaveLength(1)
    expect(ids[0]).toMatch(/^[0-9]+$/)
  })

  test('no match, a valid client id in the body: 201 with that id', async () => {
    const v = unique('cu-clientid')
    const id = `cond-${v}`
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}`, { method: 'PUT', json: { ...patient(v), id } })
    expect(res.status).toBe(201)
    expect((await readJson(res)).id).toBe(id)
    expect((await s.fhirFetch(`/Patient/${id}`)).status).toBe(200)
  })

  test('one match: 200, that resource updated to version 2', async () => {
    const v = unique('cu-one')
    const existing = await createResource(s, patient(v, { active: true }))
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}`, {
      method: 'PUT',
      json: patient(v, { active: false }),
      headers: { prefer: 'return=OperationOutcome' },
    })
    expect(res.status).toBe(200)
    expect(storageCode(await readJson(res))).toBe('SUCCESSFUL_UPDATE_WITH_CONDITIONAL_MATCH')
    const read = await readJson(await s.fhirFetch(`/Patient/${existing.id}`))
    expect(read.meta.versionId).toBe('2')
    expect(read.active).toBe(false)
    expect(await withIdentifier('Patient', v)).toEqual([existing.id])
  })

  test('one match, same content: 200, no new version, SUCCESSFUL_UPDATE_WITH_CONDITIONAL_MATCH_NO_CHANGE', async () => {
    const v = unique('cu-nochange')
    const existing = await createResource(s, patient(v, { active: true }))
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}`, {
      method: 'PUT',
      json: patient(v, { active: true }),
      headers: { prefer: 'return=OperationOutcome' },
    })
    expect(res.status).toBe(200)
    expect(storageCode(await readJson(res))).toBe('SUCCESSFUL_UPDATE_WITH_CONDITIONAL_MATCH_NO_CHANGE')
    expect(await versions('Patient', existing.id)).toBe(1)
  })

  test('one match but the body names another id: 400 HAPI-2279 and nothing written', async () => {
    const v = unique('cu-otherid')
    const existing = await createResource(s, patient(v, { active: true }))
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}`, { method: 'PUT', json: { ...patient(v, { active: false }), id: 'not-the-match' } })
    expect(res.status).toBe(400)
    expect(await diagnostics(res)).toStartWith('HAPI-2279: ')
    expect(await versions('Patient', existing.id)).toBe(1)
    expect((await s.fhirFetch('/Patient/not-the-match')).status).toBe(404)
  })

  test('more than one match: 412 HAPI-0988 and nothing written', async () => {
    const v = unique('cu-many')
    const a = await createResource(s, patient(v))
    const b = await createResource(s, patient(v))
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}`, { method: 'PUT', json: patient(v, { active: false }) })
    expect(res.status).toBe(412)
    expect(await diagnostics(res)).toStartWith('HAPI-0988: ')
    expect(await versions('Patient', a.id)).toBe(1)
    expect(await versions('Patient', b.id)).toBe(1)
  })

  test('no match and the body does not satisfy the URL: 400 HAPI-0929 and nothing written', async () => {
    const v = unique('cu-self')
    const before = await count('Patient')
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}-other`, { method: 'PUT', json: patient(v) })
    expect(res.status).toBe(400)
    expect(await diagnostics(res)).toStartWith('HAPI-0929: ')
    expect(await count('Patient')).toBe(before)
  })

  test('a key with only the read scope: 403 and nothing written', async () => {
    const { key } = await createApiKey(s.sql, 'reader', ['read'])
    const v = unique('cu-scope')
    const before = await count('Patient')
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}`, { method: 'PUT', json: patient(v), key })
    expect(res.status).toBe(403)
    expect(await count('Patient')).toBe(before)
  })
})

describe('conditional delete DELETE /{type}?query', () => {
  // HAPI: BaseHapiFhirResourceDao.deletePidList, a warning with issue code not-found.
  test('no match: 200 with an OperationOutcome, a warning, not-found, SUCCESSFUL_DELETE_NOT_FOUND', async () => {
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${unique('cd-none')}`, { method: 'DELETE' })
    expect(res.status).toBe(200)
    const oo = await readJson(res)
    expect(storageCode(oo)).toBe('SUCCESSFUL_DELETE_NOT_FOUND')
    expect(oo.issue[0].severity).toBe('warning')
    expect(oo.issue[0].code).toBe('not-found')
  })

  test('one match: 200, the resource is deleted (410 on read)', async () => {
    const v = unique('cd-one')
    const existing = await createResource(s, patient(v))
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}`, { method: 'DELETE' })
    expect(res.status).toBe(200)
    expect(storageCode(await readJson(res))).toBe('SUCCESSFUL_DELETE')
    expect((await s.fhirFetch(`/Patient/${existing.id}`)).status).toBe(410)
  })

  test('more than one match: 412 HAPI-0962 and nothing deleted', async () => {
    const v = unique('cd-many')
    const a = await createResource(s, patient(v))
    const b = await createResource(s, patient(v))
    const res = await s.fhirFetch(`/Patient?identifier=${SYS}|${v}`, { method: 'DELETE' })
    expect(res.status).toBe(412)
    expect(await diagnostics(res)).toStartWith('HAPI-0962: ')
    expect((await s.fhirFetch(`/Patient/${a.id}`)).status).toBe(200)
    expect((await s.fhirFetch(`/Patient/${b.id}`)).status).toBe(200)
  })
})

describe('conditional patch PATCH /{type}?query', () => {
  const patchBy = (query: string, headers: Record<string, string> = {}) =>
    s.fhirFetch(`/Patient?${query}`, { method: 'PATCH', json: fhirPatch(false), headers })

  test('one match: 200, patched, SUCCESSFUL_CONDITIONAL_PATCH', async () => {
    const v = unique('cp-one')
    const existing = await createResource(s, patient(v, { active: true }))
    const res = await patchBy(`identifier=${SYS}|${v}`, { prefer: 'return=OperationOutcome' })
    expect(res.status).toBe(200)
    expect(storageCode(await readJson(res))).toBe('SUCCESSFUL_CONDITIONAL_PATCH')
    const read = await readJson(await s.fhirFetch(`/Patient/${existing.id}`))
    expect(read.active).toBe(false)
    expect(read.meta.versionId).toBe('2')
  })

  test('no match: 404 HAPI-0973', async () => {
    const res = await patchBy(`identifier=${SYS}|${unique('cp-none')}`)
    expect(res.status).toBe(404)
    expect(await diagnostics(res)).toStartWith('HAPI-0973: ')
  })

  test('more than one match: 412 HAPI-0972 and nothing written', async () => {
    const v = unique('cp-many')
    const a = await createResource(s, patient(v, { active: true }))
    const b = await createResource(s, patient(v, { active: true }))
    const res = await patchBy(`identifier=${SYS}|${v}`)
    expect(res.status).toBe(412)
    expect(await diagnostics(res)).toStartWith('HAPI-0972: ')
    expect(await versions('Patient', a.id)).toBe(1)
    expect(await versions('Patient', b.id)).toBe(1)
  })
})

describe('delete: referential integrity (HAPI enforce_referential_integrity_on_delete)', () => {
  test('a referenced resource: 409 HAPI-0550/HAPI-0515 naming the referrer and path; not deleted', async () => {
    const org = await createResource(s, { resourceType: 'Organization', name: 'Referenced' })
    const p = await createResource(s, { resourceType: 'Patient', managingOrganization: { reference: `Organization/${org.id}` } })
    const res = await s.fhirFetch(`/Organization/${org.id}`, { method: 'DELETE' })
    expect(res.status).toBe(409)
    const body = await readJson(res)
    expect(body.issue[0].code).toBe('processing')
    expect(body.issue[0].diagnostics).toBe(
      `HAPI-0550: HAPI-0515: Unable to delete Organization/${org.id} because at least one resource has a reference to this resource. First reference found was resource Patient/${p.id} in path Patient.managingOrganization`,
    )
    expect((await s.fhirFetch(`/Organization/${org.id}`)).status).toBe(200)
    expect(await versions('Organization', org.id)).toBe(1)
  })

  test('the path is the element path of a nested reference: Encounter.participant.individual', async () => {
    const pr = await createResource(s, { resourceType: 'Practitioner', name: [{ family: 'Nested' }] })
    const enc = await createResource(s, {
      resourceType: 'Encounter',
      status: 'finished',
      class: { code: 'AMB' },
      participant: [{ individual: { reference: `Practitioner/${pr.id}` } }],
    })
    const res = await s.fhirFetch(`/Practitioner/${pr.id}`, { method: 'DELETE' })
    expect(res.status).toBe(409)
    expect(await diagnostics(res)).toEndWith(`First reference found was resource Encounter/${enc.id} in path Encounter.participant.individual`)
  })

  test('once the referrer is deleted, the target can be deleted', async () => {
    const org = await createResource(s, { resourceType: 'Organization', name: 'Freed' })
    const p = await createResource(s, { resourceType: 'Patient', managingOrganization: { reference: `Organization/${org.id}` } })
    expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBe(200)
    expect((await s.fhirFetch(`/Organization/${org.id}`, { method: 'DELETE' })).status).toBe(200)
    expect((await s.fhirFetch(`/Organization/${org.id}`)).status).toBe(410)
  })

  test('a reference only in an earlier version of the referrer does not block', async () => {
    const org = await createResource(s, { resourceType: 'Organization', name: 'Dropped' })
    const p = await createResource(s, { resourceType: 'Patient', managingOrganization: { reference: `Organization/${org.id}` } })
    const put = await s.fhirFetch(`/Patient/${p.id}`, { method: 'PUT', json: { resourceType: 'Patient', id: p.id, active: true } })
    expect(put.status).toBe(200)
    expect((await s.fhirFetch(`/Organization/${org.id}`, { method: 'DELETE' })).status).toBe(200)
  })

  test('a self-reference does not block', async () => {
    const id = `self-${unique('ref')}`
    const put = await s.fhirFetch(`/Patient/${id}`, {
      method: 'PUT',
      json: { resourceType: 'Patient', id, link: [{ other: { reference: `Patient/${id}` }, type: 'seealso' }] },
    })
    expect(put.status).toBe(201)
    const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from idx_reference where target_type = 'Patient' and target_id = ${id}`
    expect(n).toBe(1) // the self-reference is indexed, so only the exclusion lets the delete through
    expect((await s.fhirFetch(`/Patient/${id}`, { method: 'DELETE' })).status).toBe(200)
  })

  test('conditional delete of a referenced resource: 409 too', async () => {
    const v = unique('cd-ref')
    const org = await createResource(s, { resourceType: 'Organization', identifier: [{ system: SYS, value: v }] })
    await createResource(s, { resourceType: 'Patient', managingOrganization: { reference: `Organization/${org.id}` } })
    const res = await s.fhirFetch(`/Organization?identifier=${SYS}|${v}`, { method: 'DELETE' })
    expect(res.status).toBe(409)
    expect(await diagnostics(res)).toStartWith('HAPI-0550: HAPI-0515: ')
    expect((await s.fhirFetch(`/Organization/${org.id}`)).status).toBe(200)
  })
})
