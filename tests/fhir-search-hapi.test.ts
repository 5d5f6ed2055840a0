// Search where clients migrating from HAPI FHIR JPA 7.0 would notice (issue 22): `ne` on every quantity,
// number and date parameter, token `_sort` by system then code (QueryStack.addSortOnToken), `_offset`
// paging (synchronous, `_offset` links), the include limit said in the Bundle, and HAPI-0524 for an
// unknown parameter (BaseStorageDao.translateRawParameters).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readJson, startTestServer, type TestServer } from './harness'

let s: TestServer

beforeAll(async () => {
  s = await startTestServer({ MAX_INCLUDED_RESOURCES: '3' })
}, 120_000)

afterAll(async () => {
  await s.stop()
}, 120_000)

async function create(resource: any): Promise<any> {
  const res = await s.fhirFetch(`/${resource.resourceType}`, { method: 'POST', json: resource })
  expect(res.status).toBe(201)
  return readJson(res)
}

async function search(path: string): Promise<any> {
  const res = await s.fhirFetch(path)
  const body = await readJson(res)
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`)
  return body
}

const ids = (b: any, mode = 'match') => (b.entry ?? []).filter((e: any) => e.search?.mode === mode).map((e: any) => e.resource.id)

const obs = (tag: string, extra: Record<string, unknown>) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://example.org/hapi-search', code: tag }] },
  ...extra,
})

describe('ne on quantity, number and date parameters', () => {
  test('Observation?value-quantity=ne8.9 matches the other values, not 8.9', async () => {
    const tag = 'ne-quantity'
    const a = await create(obs(tag, { valueQuantity: { value: 8.9, unit: 'mg' } }))
    const b = await create(obs(tag, { valueQuantity: { value: 12, unit: 'mg' } }))
    const found = ids(await search(`/Observation?code=http://example.org/hapi-search|${tag}&value-quantity=ne8.9`))
    expect(found).toContain(b.id)
    expect(found).not.toContain(a.id)
  })

  test('number and date: ne excludes the value, keeps the others', async () => {
    const subject = { reference: `Patient/${(await create({ resourceType: 'Patient' })).id}` }
    const low = await create({ resourceType: 'RiskAssessment', status: 'final', subject, prediction: [{ probabilityDecimal: 0.25 }] })
    const high = await create({ resourceType: 'RiskAssessment', status: 'final', subject, prediction: [{ probabilityDecimal: 0.75 }] })
    const byNumber = ids(await search('/RiskAssessment?probability=ne0.25'))
    expect(byNumber).toContain(high.id)
    expect(byNumber).not.toContain(low.id)
    const tag = 'ne-date'
    const jan = await create(obs(tag, { effectiveDateTime: '2020-01-15' }))
    const feb = await create(obs(tag, { effectiveDateTime: '2020-02-15' }))
    const byDate = ids(await search(`/Observation?code=http://example.org/hapi-search|${tag}&date=ne2020-01`))
    expect(byDate).toContain(feb.id)
    expect(byDate).not.toContain(jan.id)
  })
  // Every parameter of these types, over real data: fhir-search-data.test.ts.
})

describe('_sort on a token: by system, then code (HAPI QueryStack.addSortOnToken)', () => {
  test('system first: a code of system "a" sorts before a lower code of system "b"', async () => {
    const tag = 'sort-token'
    const o = (system: string, code: string) =>
      create({
        resourceType: 'Observation',
        status: 'final',
        identifier: [{ system: 'http://example.org/hapi-sort', value: tag }],
        code: { coding: [{ system, code }] },
      })
    const b1 = await o('http://b.example.org', '1')
    const a9 = await o('http://a.example.org', '9')
    const a2 = await o('http://a.example.org', '2')
    const q = `identifier=http://example.org/hapi-sort|${tag}`
    expect(ids(await search(`/Observation?${q}&_sort=code`))).toEqual([a2.id, a9.id, b1.id])
    expect(ids(await search(`/Observation?${q}&_sort=-code`))).toEqual([b1.id, a9.id, a2.id])
    // Paging through the same order one at a time.
    let page = await search(`/Observation?${q}&_sort=code&_count=1`)
    const paged = [...ids(page)]
    for (let next = page.link.find((l: any) => l.relation === 'next'); next; next = page.link.find((l: any) => l.relation === 'next')) {
      page = await search(next.url.slice(next.url.indexOf('/fhir') + 5))
      paged.push(...ids(page))
    }
    expect(paged).toEqual([a2.id, a9.id, b1.id])
  })
})

describe('_offset paging (HAPI: synchronous, _offset in the links)', () => {
  test('pages by offset, with next and previous links that carry _offset', async () => {
    const tag = 'offset'
    const made: string[] = []
    for (let i = 0; i < 5; i++) made.push((await create(obs(tag, { valueInteger: i }))).id)
    const q = `code=http://example.org/hapi-search|${tag}&_sort=_id&_count=2`
    const first = await search(`/Observation?${q}&_offset=0`)
    const second = await search(`/Observation?${q}&_offset=2`)
    const third = await search(`/Observation?${q}&_offset=4`)
    const sorted = [...made].sort()
    expect([...ids(first), ...ids(second), ...ids(third)]).toEqual(sorted)
    const link = (b: any, rel: string) => b.link.find((l: any) => l.relation === rel)?.url as string | undefined
    expect(new URL(link(second, 'next') as string).searchParams.get('_offset')).toBe('4')
    expect(new URL(link(second, 'previous') as string).searchParams.get('_offset')).toBe('0')
    expect(link(third, 'next')).toBeUndefined()
    expect(link(first, 'previous')).toBeUndefined()
    const followed = await search((link(first, 'next') as string).slice((link(first, 'next') as string).indexOf('/fhir') + 5))
    expect(ids(followed)).toEqual(ids(second))
  })

  test('a bad _offset: 400', async () => {
    expect((await s.fhirFetch('/Observation?_offset=-1')).status).toBe(400)
    expect((await s.fhirFetch('/Observation?_offset=x')).status).toBe(400)
  })
})

describe('_include limit: a setting, and the Bundle says when it cut', () => {
  test('over MAX_INCLUDED_RESOURCES: that many included, and an OperationOutcome entry with search.mode outcome', async () => {
    const tag = 'include-limit'
    const pats = []
    for (let i = 0; i < 5; i++) pats.push(await create({ resourceType: 'Patient', active: true }))
    for (const p of pats) await create(obs(tag, { subject: { reference: `Patient/${p.id}` } }))
    const b = await search(`/Observation?code=http://example.org/hapi-search|${tag}&_include=Observation:subject&_count=10`)
    expect(ids(b)).toHaveLength(5)
    expect(ids(b, 'include')).toHaveLength(3)
    const outcome = b.entry.filter((e: any) => e.search?.mode === 'outcome')
    expect(outcome).toHaveLength(1)
    expect(outcome[0].resource.resourceType).toBe('OperationOutcome')
    expect(outcome[0].resource.issue[0].severity).toBe('warning')
    expect(outcome[0].resource.issue[0].diagnostics).toContain('MAX_INCLUDED_RESOURCES')
  })

  test('under the limit: no outcome entry', async () => {
    const tag = 'include-under'
    const p = await create({ resourceType: 'Patient', active: true })
    await create(obs(tag, { subject: { reference: `Patient/${p.id}` } }))
    const b = await search(`/Observation?code=http://example.org/hapi-search|${tag}&_include=Observation:subject`)
    expect(ids(b, 'include')).toEqual([p.id])
    expect(b.entry.filter((e: any) => e.search?.mode === 'outcome')).toHaveLength(0)
  })
})

describe('an unknown parameter (HAPI: BaseStorageDao.translateRawParameters)', () => {
  test('400 HAPI-0524, the valid list naming the specials', async () => {
    const res = await s.fhirFetch('/Patient?nonsense=1')
    expect(res.status).toBe(400)
    const text: string = (await readJson(res)).issue[0].diagnostics
    expect(text).toStartWith('HAPI-0524: Unknown search parameter "nonsense" for resource type "Patient". Valid search parameters for this search are: [')
    const listed = (/\[([^\]]*)\]/.exec(text)?.[1] ?? '').split(', ')
    for (const special of ['_content', '_filter', '_has', '_id', '_lastUpdated', '_list', '_text', '_type', 'birthdate', 'name'])
      expect(listed).toContain(special)
  })
})
