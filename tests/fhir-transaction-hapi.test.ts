// Transactions as HAPI FHIR JPA 7.0 processes them, where a client would notice (issue 22): entries in
// HAPI's order (DELETE, POST, PUT, PATCH, GET; BaseTransactionProcessor.TransactionSorter) with what
// each learns from the earlier ones, no duplicates (validateNoDuplicates), delete conflicts checked at
// the end (checkForDeleteConflicts), the entry etag and the codes of malformed entries.
import { describe, expect, test } from 'bun:test'
import {
  commit,
  create,
  del,
  organization,
  patient,
  post,
  postBundle,
  put,
  read,
  rejected,
  SYS,
  target,
  transaction,
  unique,
  uuid,
  withIdentifier,
} from './bundle-http'
import { readJson, useTestServer } from './harness'

const s = useTestServer()

const byIdentifier = (value: string) => `Patient?identifier=${encodeURIComponent(`${SYS}|${value}`)}`

describe('entry order and what an entry learns from the earlier ones', () => {
  // HAPI: TransactionSorter puts the DELETE first; doCreateForPostOrPut then ignores a match that
  // getDeletedResourceIds() holds, so the conditional create creates.
  test('a conditional create beside the DELETE of its match: the DELETE runs first, the create creates (201, one live resource)', async () => {
    const v = unique('order-del')
    const old = await create(s, patient(v))
    const body = await commit(s, [post(patient(v), undefined, { ifNoneExist: `identifier=${SYS}|${v}` }), del(`Patient/${old.id}`)])
    expect(body.entry[0].response.status).toBe('201 Created')
    expect(target(body.entry[0].response.location)).not.toBe(`Patient/${old.id}`)
    expect(body.entry[1].response.status).toBe('204 No Content')
    const live = await withIdentifier(s, 'Patient', v)
    expect(live).toEqual([target(body.entry[0].response.location).split('/')[1]])
    expect((await s.fhirFetch(`/Patient/${old.id}`)).status).toBe(410)
  })

  // HAPI: the POST runs before the PUT and resolves the match URL (MatchResourceUrlService.matchUrlResolved);
  // the conditional PUT of the same URL then finds that resource and updates it.
  test('a conditional PUT and a conditional create with the same criteria: one resource, created then updated', async () => {
    const v = unique('order-put')
    const body = await commit(s, [put(byIdentifier(v), patient(v, { active: true })), post(patient(v), undefined, { ifNoneExist: `identifier=${SYS}|${v}` })])
    const live = await withIdentifier(s, 'Patient', v)
    expect(live).toHaveLength(1)
    expect(body.entry[1].response.status).toBe('201 Created')
    expect(body.entry[0].response.status).toBe('200 OK')
    // Both entries name the version stored at the end, as HAPI's (the only one there is).
    expect(body.entry.map((e: any) => e.response.location)).toEqual([`Patient/${live[0]}/_history/2`, `Patient/${live[0]}/_history/2`])
    expect(body.entry.map((e: any) => e.response.etag)).toEqual(['2', '2'])
    expect((await read(s, `Patient/${live[0]}`)).active).toBe(true)
  })

  test('a conditional PATCH of what a conditional create of the Bundle makes patches that resource', async () => {
    const v = unique('order-patch')
    const ops = [{ op: 'add', path: '/active', value: true }]
    const body = await commit(s, [
      { resource: ops, request: { method: 'PATCH', url: byIdentifier(v) } },
      post(patient(v), undefined, { ifNoneExist: `identifier=${SYS}|${v}` }),
    ])
    const live = await withIdentifier(s, 'Patient', v)
    expect(live).toHaveLength(1)
    expect(body.entry[0].response.status).toBe('200 OK')
    expect((await read(s, `Patient/${live[0]}`)).active).toBe(true)
  })

  // HAPI: FhirSystemDaoR4Test.testTransactionCreateWithDuplicateMatchUrl02.
  test('a conditional create beside a plain create of the same identifier: 400 HAPI-0542, nothing written', async () => {
    const v = unique('dup')
    const text = await rejected(s, transaction([post(patient(v), undefined, { ifNoneExist: `identifier=${SYS}|${v}` }), post(patient(v))]), 400)
    expect(text).toContain(
      `HAPI-0542: Unable to process Transaction - Request would cause multiple resources to match URL: "Patient?identifier=${SYS}|${v}". Does transaction request contain duplicates?`,
    )
  })

  test('a conditional PUT that creates beside a plain create of the same identifier: 400 HAPI-0542', async () => {
    const v = unique('dup-put')
    const text = await rejected(s, transaction([put(byIdentifier(v), patient(v)), post(patient(v))]), 400)
    expect(text).toContain('HAPI-0542: ')
  })
})

describe('a resource created through its match URL must satisfy it', () => {
  // HAPI: FhirSystemDaoR4Test.testConditionalUrlWhichDoesNotMatchResource (validateAllInsertsMatchTheirConditionalUrls).
  test('a conditional PUT that creates a resource its URL does not match: 412 HAPI-0539, nothing written', async () => {
    const v = unique('put-self')
    const url = byIdentifier(`${v}-other`)
    const text = await rejected(s, transaction([{ fullUrl: uuid(), ...put(url, patient(v)) }]), 412, 0)
    expect(text).toContain(`HAPI-0539: Invalid conditional URL "Patient?identifier=`)
    expect(text).toContain('The given resource is not matched by this URL.')
  })
})

describe('DELETE entries check referrers as a DELETE alone does', () => {
  test('deleting a resource another one references: 409 HAPI-0550/0515 naming the entry, nothing written', async () => {
    const org = await create(s, organization(unique('ref-org')))
    const p = await create(s, patient(unique('ref-p'), { managingOrganization: { reference: `Organization/${org.id}` } }))
    const text = await rejected(s, transaction([del(`Organization/${org.id}`)]), 409, 0)
    expect(text).toContain(
      `HAPI-0550: HAPI-0515: Unable to delete Organization/${org.id} because at least one resource has a reference to this resource. First reference found was resource Patient/${p.id} in path Patient.managingOrganization`,
    )
    expect((await s.fhirFetch(`/Organization/${org.id}`)).status).toBe(200)
  })

  test('a referrer the Bundle also deletes, or rewrites without the reference, does not block', async () => {
    const org = await create(s, organization(unique('ref-org2')))
    const a = await create(s, patient(unique('ref-a'), { managingOrganization: { reference: `Organization/${org.id}` } }))
    const b = await create(s, patient(unique('ref-b'), { managingOrganization: { reference: `Organization/${org.id}` } }))
    const { managingOrganization: _, ...bWithout } = b
    const body = await commit(s, [del(`Organization/${org.id}`), del(`Patient/${a.id}`), put(`Patient/${b.id}`, bWithout)])
    expect(body.entry.map((e: any) => e.response.status)).toEqual(['204 No Content', '204 No Content', '200 OK'])
    expect((await s.fhirFetch(`/Organization/${org.id}`)).status).toBe(410)
  })
})

describe('entry responses and malformed entries', () => {
  test('response.etag is the bare version id, for creates, updates and deletes', async () => {
    const kept = await create(s, patient(unique('etag-kept')))
    const gone = await create(s, patient(unique('etag-gone')))
    const body = await commit(s, [post(patient(unique('etag-new'))), put(`Patient/${kept.id}`, { ...kept, active: true }), del(`Patient/${gone.id}`)])
    expect(body.entry.map((e: any) => e.response.etag)).toEqual(['1', '2', '2'])
  })

  test('a batch entry too', async () => {
    const res = await postBundle(s, { resourceType: 'Bundle', type: 'batch', entry: [post(patient(unique('etag-batch')))] })
    expect(res.status).toBe(200)
    expect((await readJson(res)).entry[0].response.etag).toBe('1')
  })

  test('an entry without request.method: 400 HAPI-0529', async () => {
    const text = await rejected(s, transaction([{ resource: patient(unique('no-verb')), request: { url: 'Patient' } }]), 400)
    expect(text).toContain('HAPI-0529: ')
    expect(text).toContain('Bundle.entry[0].request.method')
  })

  test('an entry without request.url: 400 HAPI-0545', async () => {
    const text = await rejected(s, transaction([{ resource: patient(unique('no-url')), request: { method: 'PUT' } }]), 400)
    expect(text).toContain('HAPI-0545: ')
  })
})
