// $get-resource-counts as HAPI FHIR JPA 7.0 answers it (notes/hapi-behaviour.md §3.5): Parameters with one
// part per type that has rows, sorted by type, valueInteger = count; deleted resources count until
// expunged. Ours is exact at once (HAPI's is cached). GET and POST; admin scope.
import { beforeAll, describe, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { parseFhirXml } from '../shared/fhir/format/xml-parse'
import { createResource, readJson, useTestServer } from './harness'

const s = useTestServer()

async function counts(init: RequestInit = {}): Promise<Record<string, number>> {
  const res = await s.fhirFetch('/$get-resource-counts', init)
  expect(res.status).toBe(200)
  const body = await readJson(res)
  expect(body.resourceType).toBe('Parameters')
  return Object.fromEntries((body.parameter ?? []).map((p: any) => [p.name, p.valueInteger]))
}

describe('$get-resource-counts', () => {
  test('an empty server: a Parameters with no parameter', async () => {
    const res = await s.fhirFetch('/$get-resource-counts')
    expect(res.status).toBe(200)
    expect(await readJson(res)).toEqual({ resourceType: 'Parameters' })
  })

  describe('with resources', () => {
    let deletedId: string
    beforeAll(async () => {
      for (let i = 0; i < 3; i++) await createResource(s, { resourceType: 'Patient', active: true })
      deletedId = (await createResource(s, { resourceType: 'Patient', active: false })).id
      await createResource(s, { resourceType: 'Organization', name: 'Acme' })
      await createResource(s, { resourceType: 'AllergyIntolerance', patient: { reference: `Patient/${deletedId}` } })
      // An update adds a version, not a resource.
      const org = await createResource(s, { resourceType: 'Organization', name: 'Other' })
      const put = await s.fhirFetch(`/Organization/${org.id}`, { method: 'PUT', json: { ...org, name: 'Renamed' } })
      expect(put.status).toBe(200)
    })

    test('one part per type, sorted, with exact counts (versions do not count)', async () => {
      const res = await s.fhirFetch('/$get-resource-counts')
      const body = await readJson(res)
      expect(body.parameter).toEqual([
        { name: 'AllergyIntolerance', valueInteger: 1 },
        { name: 'Organization', valueInteger: 2 },
        { name: 'Patient', valueInteger: 4 },
      ])
    })

    test('a deleted resource still counts until it is expunged', async () => {
      // The AllergyIntolerance refers to the patient: remove it first so the delete is allowed.
      const allergy = (await readJson(await s.fhirFetch('/AllergyIntolerance'))).entry[0].resource
      expect((await s.fhirFetch(`/AllergyIntolerance/${allergy.id}`, { method: 'DELETE' })).status).toBe(200)
      expect((await s.fhirFetch(`/Patient/${deletedId}`, { method: 'DELETE' })).status).toBe(200)
      expect(await counts()).toEqual({ AllergyIntolerance: 1, Organization: 2, Patient: 4 })
      const ex = await s.fhirFetch(`/Patient/${deletedId}/$expunge`, {
        method: 'POST',
        json: { resourceType: 'Parameters', parameter: [{ name: 'expungeDeletedResources', valueBoolean: true }] },
      })
      expect(ex.status).toBe(200)
      expect(await counts()).toEqual({ AllergyIntolerance: 1, Organization: 2, Patient: 3 })
    })

    test('POST answers the same', async () => {
      expect(await counts({ method: 'POST', json: { resourceType: 'Parameters' } } as any)).toEqual(await counts())
    })

    test('counts stay exact across many writes (the deltas are folded together)', async () => {
      const bundle = {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: Array.from({ length: 40 }, () => ({ request: { method: 'POST', url: 'Basic' }, resource: { resourceType: 'Basic', code: { text: 'x' } } })),
      }
      expect((await s.fhirFetch('', { method: 'POST', json: bundle })).status).toBe(200)
      for (let i = 0; i < 600; i++) await s.sql`insert into resource_count (res_type, n) values ('Basic', 0)`
      expect((await counts()).Basic).toBe(40)
      const [{ rows }] = await s.sql<{ rows: number }[]>`select count(*)::int as rows from resource_count`
      expect(rows).toBeLessThan(10)
      expect((await counts()).Basic).toBe(40)
      const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource where res_type = 'Basic'`
      expect(n).toBe(40)
    })

    test('XML: a Parameters in FHIR XML', async () => {
      const res = await s.fhirFetch('/$get-resource-counts?_format=xml')
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain('application/fhir+xml')
      const text = await res.text()
      expect(text).toContain('<Parameters xmlns="http://hl7.org/fhir">')
      const p = parseFhirXml(text)
      expect(p.parameter.find((x: any) => x.name === 'Organization')).toEqual({ name: 'Organization', valueInteger: 2 })
    })
  })

  test('needs the admin scope: 403 for read and write keys, 401 without a key', async () => {
    for (const scopes of [['read'], ['write']] as const) {
      const { key } = await createApiKey(s.sql, `counts-${scopes[0]}`, [...scopes])
      const res = await s.fhirFetch('/$get-resource-counts', { key })
      expect(res.status).toBe(403)
      expect((await readJson(res)).resourceType).toBe('OperationOutcome')
    }
    expect((await s.fhirFetch('/$get-resource-counts', { key: null })).status).toBe(401)
  })

  test('not at type or instance level', async () => {
    expect((await s.fhirFetch('/Patient/$get-resource-counts')).status).toBe(400)
  })
})
