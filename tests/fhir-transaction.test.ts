// Transaction Bundles over HTTP, processed by the workers: atomicity, entry order and statuses, placeholder
// and conditional references, conditional operations, Prefer, bad input, and the Synthea conditional data
// set loaded twice (batch: fhir-batch.test.ts; respond-async: fhir-transaction-async.test.ts).
// https://hl7.org/fhir/R4/http.html#transaction  (reference behaviour: shared/notes/hapi-behaviour.md §4)
import { describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'

import {
  bundle,
  commit,
  create,
  del,
  get,
  observation,
  organization,
  patient,
  post,
  postBundle,
  put,
  read,
  rejected,
  rows,
  SYS,
  target,
  transaction,
  unique,
  uuid,
  withIdentifier,
} from './bundle-http'

describe('transaction', () => {
  const s = useTestServer()

  describe('all or nothing', () => {
    test('a reference to a missing resource in the last entry: 400 naming the entry, nothing written', async () => {
      const p = uuid()
      const v = unique('aon-ref')
      const text = await rejected(s, transaction([post(patient(v), p), post(observation(p)), post(observation('Patient/no-such-patient-x1'))]), 400, 2)
      expect(text).toContain('HAPI-1094')
      expect(await withIdentifier(s, 'Patient', v)).toEqual([])
    })

    test('a reference to a missing resource in an update (PUT) entry: 400 HAPI-1094 naming it and its path', async () => {
      const v = unique('aon-put-ref')
      const text = await rejected(
        s,
        transaction([post(patient(v), uuid()), put(`Observation/${v}`, { ...observation('Patient/no-such-patient-x2'), id: v })]),
        400,
        1,
      )
      expect(text).toContain('HAPI-1094: Resource Patient/no-such-patient-x2 not found, specified in path: Observation.subject')
    })

    test('an invalid resource: 400 naming the entry, nothing written', async () => {
      const v = unique('aon-invalid')
      await rejected(
        s,
        transaction([post(patient(v), uuid()), put('Patient/aon-bad', { resourceType: 'Patient', id: 'aon-bad', birthDate: 'not-a-date' })]),
        400,
        1,
      )
      expect(await withIdentifier(s, 'Patient', v)).toEqual([])
    })

    test('an If-Match on a stale version: 409 naming the entry, nothing written (the earlier update neither)', async () => {
      const a = await create(s, patient(unique('aon-a'), { active: true }))
      const b = await create(s, patient(unique('aon-b')))
      await rejected(
        s,
        transaction([put(`Patient/${a.id}`, { ...a, active: false }), put(`Patient/${b.id}`, { ...b, gender: 'male' }, { ifMatch: 'W/"7"' })]),
        409,
        1,
      )
      const after = await read(s, `Patient/${a.id}`)
      expect(after.meta.versionId).toBe('1')
      expect(after.active).toBe(true)
    })

    test('a DELETE then a failing POST: the delete is rolled back', async () => {
      const a = await create(s, patient(unique('aon-del')))
      await rejected(s, transaction([del(`Patient/${a.id}`), post(observation('Patient/no-such-patient-x2'))]), 400, 1)
      expect((await read(s, `Patient/${a.id}`)).id).toBe(a.id)
    })
  })

  describe('response', () => {
    test('entries in request order with HAPI statuses, location, etag and lastModified; GET entries see the writes', async () => {
      const kept = await create(s, patient(unique('resp-kept'), { active: true }))
      const gone = await create(s, patient(unique('resp-gone')))
      const v = unique('resp-new')
      const p = uuid()
      const body = await commit(s, [
        get(`Patient/${kept.id}`),
        get(`Patient?identifier=${SYS}|${v}`),
        put(`Patient/${kept.id}`, { ...kept, active: false }),
        del(`Patient/${gone.id}`),
        post(patient(v), p),
        post(observation(p)),
      ])
      const [readEntry, searchEntry, updated, deleted, created, obs] = body.entry

      expect(updated.response.status).toBe('200 OK')
      expect(updated.response.location).toBe(`Patient/${kept.id}/_history/2`)
      expect(updated.response.etag).toBe('2') // the bare version (HAPI: BaseTransactionProcessor, getVersionIdPart())
      expect(new Date(updated.response.lastModified).toISOString()).toBe(updated.response.lastModified)
      expect(updated.resource).toBeUndefined()

      expect(deleted.response.status).toBe('204 No Content')
      expect(deleted.resource).toBeUndefined()

      expect(created.response.status).toBe('201 Created')
      expect(created.response.location).toMatch(/^Patient\/[A-Za-z0-9\-.]+\/_history\/1$/)
      expect(created.response.etag).toBe('1')
      expect(created.response.lastModified).toBeString()
      expect(obs.response.status).toBe('201 Created')
      expect(obs.response.location).toMatch(/^Observation\/[A-Za-z0-9\-.]+\/_history\/1$/)

      // GET entries run after the writes (HAPI), so they see them.
      expect(readEntry.response.status).toBe('200 OK')
      expect(readEntry.resource.id).toBe(kept.id)
      expect(readEntry.resource.meta.versionId).toBe('2')
      expect(readEntry.resource.active).toBe(false)
      expect(searchEntry.response.status).toBe('200 OK')
      expect(searchEntry.resource.resourceType).toBe('Bundle')
      expect(searchEntry.resource.type).toBe('searchset')
      expect(searchEntry.resource.entry.map((e: any) => `Patient/${e.resource.id}`)).toEqual([target(created.response.location)])

      expect((await s.fhirFetch(`/Patient/${gone.id}`)).status).toBe(410)
      expect((await read(s, target(created.response.location))).identifier[0].value).toBe(v)
    })

    test('Prefer: return=representation includes the written resources; the default does not', async () => {
      const plain = await commit(s, [post(patient(unique('pref-min')), uuid())])
      expect(plain.entry[0].resource).toBeUndefined()
      expect(plain.entry[0].response.status).toBe('201 Created')

      const v = unique('pref-rep')
      const rep = await commit(s, [post(patient(v), uuid())], { prefer: 'return=representation' })
      const r = rep.entry[0].resource
      expect(r.resourceType).toBe('Patient')
      expect(r.identifier[0].value).toBe(v)
      expect(`Patient/${r.id}/_history/${r.meta.versionId}`).toBe(rep.entry[0].response.location)
    })
  })

  describe('placeholder references', () => {
    test('urn:uuid and urn:oid fullUrls become the new ids in references and uri elements', async () => {
      const org = uuid()
      const pat = 'urn:oid:1.2.840.113619.6.197.' + Date.now()
      const v = unique('ph')
      const body = await commit(s, [
        post(observation(pat, { performer: [{ reference: org }], focus: [{ reference: pat }] })),
        post(patient(v, { managingOrganization: { reference: org }, extension: [{ url: 'http://example.org/ext/source', valueUri: org }] }), pat),
        post(organization(unique('ph-org')), org),
      ])
      const obsRef = target(body.entry[0].response.location)
      const patRef = target(body.entry[1].response.location)
      const orgRef = target(body.entry[2].response.location)
      const obs = await read(s, obsRef)
      expect(obs.subject.reference).toBe(patRef)
      expect(obs.focus[0].reference).toBe(patRef)
      expect(obs.performer[0].reference).toBe(orgRef)
      const p = await read(s, patRef)
      expect(p.managingOrganization.reference).toBe(orgRef)
      expect(p.extension[0].valueUri).toBe(orgRef)
      expect(JSON.stringify([obs, p])).not.toContain('urn:')
    })
  })

  describe('conditional create', () => {
    test('a match: 200 OK with the existing resource location, nothing written, references point at it', async () => {
      const v = unique('cc-match')
      const existing = await create(s, organization(v))
      const o = uuid()
      const before = await rows(s)
      const body = await commit(s, [
        post(organization(v, { name: 'other name' }), o, { ifNoneExist: `identifier=${SYS}|${v}` }),
        post(patient(unique('cc-match-p'), { managingOrganization: { reference: o } })),
      ])
      expect(body.entry[0].response.status).toBe('200 OK')
      expect(body.entry[0].response.location).toBe(`Organization/${existing.id}/_history/1`)
      expect(body.entry[1].response.status).toBe('201 Created')
      expect(await rows(s)).toEqual({ resource: before.resource + 1, history: before.history }) // the Patient only
      expect((await read(s, `Organization/${existing.id}`)).name).toBe(v)
      expect((await read(s, target(body.entry[1].response.location))).managingOrganization.reference).toBe(`Organization/${existing.id}`)
    })

    test('identical conditional creates in one bundle are collapsed into one resource; references to the duplicate point at it', async () => {
      const v = unique('cc-dup')
      const first = uuid()
      const second = uuid()
      const cond = { ifNoneExist: `identifier=${SYS}|${v}` }
      const body = await commit(s, [
        post(organization(v), first, cond),
        post(organization(v), second, cond),
        post(patient(unique('cc-dup-a'), { managingOrganization: { reference: first } })),
        post(patient(unique('cc-dup-b'), { managingOrganization: { reference: second } })),
      ])
      const ids = await withIdentifier(s, 'Organization', v)
      expect(ids).toHaveLength(1)
      expect(body.entry[0].response.status).toBe('201 Created')
      expect(body.entry[1].response.status).toBe('200 OK')
      expect(body.entry[0].response.location).toBe(`Organization/${ids[0]}/_history/1`)
      expect(body.entry[1].response.location).toBe(`Organization/${ids[0]}/_history/1`)
      for (const e of body.entry.slice(2)) expect((await read(s, target(e.response.location))).managingOrganization.reference).toBe(`Organization/${ids[0]}`)
    })

    test('two anonymous entries (no fullUrl) with the same conditional URL: 400 HAPI-2008, nothing written', async () => {
      const v = unique('cc-anon')
      const cond = { ifNoneExist: `identifier=${SYS}|${v}` }
      const text = await rejected(s, transaction([post(organization(v), undefined, cond), post(organization(v), undefined, cond)]), 400)
      expect(text).toContain('HAPI-2008')
    })

    // HAPI: FhirResourceDaoR4CreateTest.testConditionalCreateFailsIfMatchUrlDoesntMatch_InTransaction.
    test('a resource that does not satisfy its own ifNoneExist: 400 HAPI-0929, nothing written', async () => {
      const v = unique('cc-self')
      const text = await rejected(s, transaction([post(organization(v), uuid(), { ifNoneExist: `identifier=${SYS}|${v}-other` })]), 400, 0)
      expect(text).toContain('HAPI-0929: Failed to process conditional create. The supplied resource did not satisfy the conditional URL.')
    })

    test('more than one match: 412 naming the entry, nothing written', async () => {
      const v = unique('cc-many')
      await create(s, organization(v))
      await create(s, organization(v))
      await rejected(
        s,
        transaction([post(patient(unique('cc-many-p')), uuid()), post(organization(v), uuid(), { ifNoneExist: `identifier=${SYS}|${v}` })]),
        412,
        1,
      )
    })
  })

  describe('conditional references', () => {
    const ref = (v: string) => `Organization?identifier=${SYS}|${v}`

    test('resolved to an existing resource', async () => {
      const v = unique('cr-existing')
      const org = await create(s, organization(v))
      const body = await commit(s, [post(patient(unique('cr-p1'), { managingOrganization: { reference: ref(v) } }))])
      expect((await read(s, target(body.entry[0].response.location))).managingOrganization.reference).toBe(`Organization/${org.id}`)
    })

    test('resolved to a resource created earlier in the same bundle (plain and conditional creates)', async () => {
      const plain = unique('cr-local')
      const conditional = unique('cr-local-cond')
      const body = await commit(s, [
        post(patient(unique('cr-p2'), { managingOrganization: { reference: ref(plain) }, generalPractitioner: [{ reference: ref(conditional) }] })),
        post(organization(plain), uuid()),
        post(organization(conditional), uuid(), { ifNoneExist: `identifier=${SYS}|${conditional}` }),
      ])
      const p = await read(s, target(body.entry[0].response.location))
      expect(p.managingOrganization.reference).toBe(target(body.entry[1].response.location))
      expect(p.generalPractitioner[0].reference).toBe(target(body.entry[2].response.location))
    })

    test('no match: 404 naming the entry, nothing written', async () => {
      const text = await rejected(
        s,
        transaction([
          post(organization(unique('cr-none-o')), uuid()),
          post(patient(unique('cr-none'), { managingOrganization: { reference: ref(unique('cr-absent')) } })),
        ]),
        404,
        1,
      )
      expect(text).toContain('HAPI-1091')
    })

    test('two matches: 412 naming the entry, nothing written', async () => {
      const v = unique('cr-two')
      await create(s, organization(v))
      await create(s, organization(v))
      const text = await rejected(s, transaction([post(patient(unique('cr-two-p'), { managingOrganization: { reference: ref(v) } }))]), 412, 0)
      expect(text).toContain('HAPI-1092')
    })
  })

  describe('conditional update and delete', () => {
    test('PUT Type?criteria: one match updated in place, no match created', async () => {
      const matched = unique('cu-one')
      const existing = await create(s, patient(matched))
      const fresh = unique('cu-none')
      const body = await commit(s, [
        put(`Patient?identifier=${SYS}|${matched}`, patient(matched, { gender: 'female' })),
        put(`Patient?identifier=${SYS}|${fresh}`, patient(fresh, { gender: 'male' })),
      ])
      expect(body.entry[0].response.status).toBe('200 OK')
      expect(body.entry[0].response.location).toBe(`Patient/${existing.id}/_history/2`)
      expect((await read(s, `Patient/${existing.id}`)).gender).toBe('female')
      expect(body.entry[1].response.status).toBe('201 Created')
      expect(await withIdentifier(s, 'Patient', fresh)).toEqual([target(body.entry[1].response.location).split('/')[1]])
    })

    test('PUT Type?criteria with two matches: 412 naming the entry, nothing written', async () => {
      const v = unique('cu-two')
      await create(s, patient(v))
      await create(s, patient(v))
      await rejected(
        s,
        transaction([post(patient(unique('cu-two-other')), uuid()), put(`Patient?identifier=${SYS}|${v}`, patient(v, { gender: 'other' }))]),
        412,
        1,
      )
    })

    test('DELETE Type?criteria: the match is deleted (204); no match is 204 too', async () => {
      const v = unique('cd-one')
      const existing = await create(s, patient(v))
      const body = await commit(s, [del(`Patient?identifier=${SYS}|${v}`), del(`Patient?identifier=${SYS}|${unique('cd-none')}`)])
      expect(body.entry[0].response.status).toBe('204 No Content')
      expect(body.entry[1].response.status).toBe('204 No Content')
      expect((await s.fhirFetch(`/Patient/${existing.id}`)).status).toBe(410)
    })
  })

  describe('bad input', () => {
    test('not a Bundle: 400', async () => {
      await rejected(s, patient(unique('bad-notbundle')), 400)
    })

    test('Bundle.type collection: 400', async () => {
      const text = await rejected(s, bundle('collection', [post(patient(unique('bad-collection')), uuid())]), 400)
      expect(text).toContain('collection')
    })

    test('an entry without request: 400 naming the entry', async () => {
      await rejected(s, transaction([post(patient(unique('bad-noreq-a')), uuid()), { fullUrl: uuid(), resource: patient(unique('bad-noreq-b')) }]), 400, 1)
    })

    test('an unknown method: 400 naming the entry', async () => {
      await rejected(
        s,
        transaction([post(patient(unique('bad-verb-a')), uuid()), { resource: patient(unique('bad-verb-b')), request: { method: 'FETCH', url: 'Patient' } }]),
        400,
        1,
      )
    })

    test('a placeholder reference to no entry: 400 naming the entry', async () => {
      const text = await rejected(s, transaction([post(patient(unique('bad-ph')), uuid()), post(observation(uuid()))]), 400, 1)
      expect(text).toContain('HAPI-0541')
    })

    test('Bundle.type missing: processed as a transaction (HAPI)', async () => {
      const v = unique('bad-notype')
      const res = await postBundle(s, { resourceType: 'Bundle', entry: [post(patient(v), uuid())] })
      const body = await readJson(res)
      expect({ status: res.status, type: body.type }).toEqual({ status: 200, type: 'transaction-response' })
      expect(await withIdentifier(s, 'Patient', v)).toHaveLength(1)
    })

    test('a duplicate fullUrl: 400 naming the entry', async () => {
      const u = uuid()
      const text = await rejected(s, transaction([post(patient(unique('bad-dup-a')), u), post(patient(unique('bad-dup-b')), u)]), 400, 1)
      expect(text).toContain('HAPI-0534')
    })
  })
})
