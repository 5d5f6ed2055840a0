// History at instance, type and system level, with _since, _at, _count and paging links.
// https://hl7.org/fhir/R4/http.html#history  (reference behaviour: shared/notes/hapi-behaviour.md §1.5)
import { beforeAll, describe, expect, test } from 'bun:test'
import { ADMIN_KEY, createResource, readJson, useTestServer } from './harness'

const s = useTestServer()

const create = (resource: any) => createResource(s, resource)

async function put(resource: any): Promise<any> {
  const res = await s.fhirFetch(`/${resource.resourceType}/${resource.id}`, { method: 'PUT', json: resource })
  expect([200, 201]).toContain(res.status)
  return res.json()
}

async function bundle(path: string): Promise<any> {
  const res = await s.fhirFetch(path)
  expect(res.status).toBe(200)
  const body = await readJson(res)
  expect(body.resourceType).toBe('Bundle')
  expect(body.type).toBe('history')
  return body
}

/** Follows a paging link exactly as the server wrote it. */
async function follow(link: string): Promise<any> {
  const res = await fetch(link, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
  expect(res.status).toBe(200)
  return readJson(res)
}

const linkOf = (b: any, relation: string): string | undefined => b.link?.find((l: any) => l.relation === relation)?.url
const entryKey = (e: any) => `${e.fullUrl.split('/').at(-1)}|${e.response.etag}`
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function diagnostics(res: Response): Promise<string> {
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  return body.issue.map((i: any) => i.diagnostics ?? '').join('\n')
}

describe('instance history GET /{type}/{id}/_history', () => {
  let id: string

  beforeAll(async () => {
    id = (await create({ resourceType: 'Patient', birthDate: '2000-01-01' })).id
    await put({ resourceType: 'Patient', id, birthDate: '2000-01-02' })
    expect((await s.fhirFetch(`/Patient/${id}`, { method: 'DELETE' })).status).toBe(200)
  })

  test('newest first, with request/response as HAPI renders them and no resource for the deletion', async () => {
    const b = await bundle(`/Patient/${id}/_history`)
    expect(b.total).toBe(3)
    expect(b.entry).toHaveLength(3)
    const [del, upd, crt] = b.entry
    for (const e of b.entry) {
      expect(e.fullUrl).toEndWith(`/fhir/Patient/${id}`)
      expect(e.request.url).toStartWith('Patient')
      expect(Number.isNaN(Date.parse(e.response.lastModified))).toBe(false)
    }
    // request.url is the version's unqualified id, as HAPI's R4BundleFactory writes it.
    expect(del.request.method).toBe('DELETE')
    expect(del.request.url).toBe(`Patient/${id}/_history/3`)
    expect(del.resource).toBeUndefined()
    expect(del.response.status).toBe('200 OK')
    expect(del.response.etag).toBe('W/"3"')

    expect(upd.request.method).toBe('PUT')
    expect(upd.request.url).toBe(`Patient/${id}/_history/2`)
    expect(upd.response.status).toBe('200 OK')
    expect(upd.response.etag).toBe('W/"2"')
    expect(upd.resource.birthDate).toBe('2000-01-02')
    expect(upd.resource.meta.versionId).toBe('2')

    expect(crt.request.method).toBe('POST')
    expect(crt.request.url).toBe(`Patient/${id}/_history/1`)
    expect(crt.response.status).toBe('201 Created')
    expect(crt.response.etag).toBe('W/"1"')
    expect(crt.resource.birthDate).toBe('2000-01-01')

    const times = b.entry.map((e: any) => Date.parse(e.response.lastModified))
    expect([...times].sort((a, c) => c - a)).toEqual(times)
  })

  test('fullUrl is {base}/fhir/{type}/{id}', async () => {
    const b = await bundle(`/Patient/${id}/_history`)
    expect(b.entry[0].fullUrl).toBe(`${s.fhir}/Patient/${id}`)
  })

  test('history of an unknown resource: 404', async () => {
    const res = await s.fhirFetch('/Patient/no-such-patient/_history')
    expect(res.status).toBe(404)
    await diagnostics(res)
  })
})

describe('type and system history', () => {
  let obs: any
  let pat: any

  beforeAll(async () => {
    obs = await create({ resourceType: 'Observation', status: 'final', code: { text: 'type-history' } })
    pat = await create({ resourceType: 'Patient', name: [{ family: 'TypeHistory' }] })
  })

  test('GET /{type}/_history holds only that type', async () => {
    const b = await bundle('/Observation/_history?_count=100')
    const urls = b.entry.map((e: any) => e.fullUrl)
    expect(urls.some((u: string) => u.endsWith(`/Observation/${obs.id}`))).toBe(true)
    expect(b.entry.every((e: any) => e.request.url.startsWith('Observation'))).toBe(true)
    expect(urls.some((u: string) => u.includes('/Patient/'))).toBe(false)
  })

  test('GET /_history holds every type', async () => {
    const b = await bundle('/_history?_count=200')
    const urls = b.entry.map((e: any) => e.fullUrl)
    expect(urls.some((u: string) => u.endsWith(`/Observation/${obs.id}`))).toBe(true)
    expect(urls.some((u: string) => u.endsWith(`/Patient/${pat.id}`))).toBe(true)
  })
})

describe('paging with _count', () => {
  const ids: string[] = []

  beforeAll(async () => {
    for (let i = 0; i < 7; i++) ids.push((await create({ resourceType: 'Practitioner', name: [{ family: `Page-${i}` }] })).id)
    await put({ resourceType: 'Practitioner', id: ids[0], name: [{ family: 'Page-0b' }] })
  })

  test('following next links to the end gives every entry once, without resources created meanwhile', async () => {
    const first = await bundle('/Practitioner/_history?_count=2')
    expect(first.entry).toHaveLength(2)
    const seen: string[] = first.entry.map(entryKey)
    const added: string[] = []
    let page = first
    let pages = 1
    while (linkOf(page, 'next')) {
      // Writes between page fetches must not shift or leak into the pages of this history.
      added.push((await create({ resourceType: 'Practitioner', name: [{ family: `Late-${pages}` }] })).id)
      page = await follow(linkOf(page, 'next') as string)
      seen.push(...(page.entry ?? []).map(entryKey))
      pages++
      expect(pages).toBeLessThan(20)
    }
    expect(pages).toBe(4)
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen).toHaveLength(8)
    const expected = [...ids.map((id) => `${id}|W/"1"`), `${ids[0]}|W/"2"`]
    expect([...seen].sort()).toEqual(expected.sort())
    for (const id of added) expect(seen.some((k) => k.startsWith(`${id}|`))).toBe(false)
  })

  test('a later page has a previous link back to the page before', async () => {
    const first = await bundle('/Practitioner/_history?_count=2')
    const second = await follow(linkOf(first, 'next') as string)
    expect(linkOf(first, 'previous')).toBeUndefined()
    const prev = linkOf(second, 'previous')
    expect(prev).toBeDefined()
    const back = await follow(prev as string)
    expect(back.entry.map(entryKey)).toEqual(first.entry.map(entryKey))
  })

  test('paging links point at this server', async () => {
    const first = await bundle('/Practitioner/_history?_count=2')
    expect(linkOf(first, 'next')).toStartWith(`${s.fhir}?`)
    expect(linkOf(first, 'self')).toStartWith(`${s.fhir}/Practitioner/_history`)
  })

  test('_getpages with a garbage id: 410', async () => {
    const res = await s.fhirFetch('?_getpages=this-is-not-a-page&_getpagesoffset=2&_count=2')
    expect(res.status).toBe(410)
    await diagnostics(res)
  })
})

describe('_since and _at', () => {
  test('_since keeps versions updated at or after the instant', async () => {
    const p = await create({ resourceType: 'Device', status: 'active' })
    await sleep(20)
    const v2 = await put({ resourceType: 'Device', id: p.id, status: 'inactive' })
    const since = await bundle(`/Device/${p.id}/_history?_since=${encodeURIComponent(v2.meta.lastUpdated)}`)
    // HAPI's HistoryBuilder uses myUpdated >= _since (inclusive), as the spec says "at or after".
    expect(since.entry.map((e: any) => e.response.etag)).toEqual(['W/"2"'])
    const later = new Date(Date.parse(v2.meta.lastUpdated) + 1000).toISOString()
    const none = await bundle(`/Device/${p.id}/_history?_since=${encodeURIComponent(later)}`)
    expect(none.entry ?? []).toHaveLength(0)
    const before = new Date(Date.parse(p.meta.lastUpdated) - 1000).toISOString()
    const all = await bundle(`/Device/${p.id}/_history?_since=${encodeURIComponent(before)}`)
    expect(all.entry.map((e: any) => e.response.etag)).toEqual(['W/"2"', 'W/"1"'])
  })

  test('_since at type level leaves out older versions', async () => {
    const old = await create({ resourceType: 'Location', name: 'old' })
    await sleep(20)
    const cut = new Date().toISOString()
    await sleep(20)
    const fresh = await create({ resourceType: 'Location', name: 'fresh' })
    const b = await bundle(`/Location/_history?_since=${encodeURIComponent(cut)}`)
    const urls = b.entry.map((e: any) => e.fullUrl)
    expect(urls.some((u: string) => u.endsWith(`/Location/${fresh.id}`))).toBe(true)
    expect(urls.some((u: string) => u.endsWith(`/Location/${old.id}`))).toBe(false)
  })

  test('_at gives the version current at that instant', async () => {
    const p = await create({ resourceType: 'Organization', name: 'v1' })
    // An instant with second precision strictly after v1 and at least a second before v2.
    const atMs = Math.ceil((Date.parse(p.meta.lastUpdated) + 1) / 1000) * 1000
    await sleep(Math.max(0, atMs + 1100 - Date.now()))
    await put({ resourceType: 'Organization', id: p.id, name: 'v2' })
    const at = new Date(atMs).toISOString().replace('.000Z', 'Z')
    const b = await bundle(`/Organization/${p.id}/_history?_at=${encodeURIComponent(at)}`)
    const etags = b.entry.map((e: any) => e.response.etag)
    expect(etags).toContain('W/"1"')
    expect(etags).not.toContain('W/"2"')
  })

  test('_since together with _at: 400', async () => {
    const res = await s.fhirFetch('/_history?_since=2020-01-01T00:00:00Z&_at=2020-01-01')
    expect(res.status).toBe(400)
    await diagnostics(res)
  })

  test('a malformed _since: 400', async () => {
    const res = await s.fhirFetch('/Patient/_history?_since=yesterday')
    expect(res.status).toBe(400)
    await diagnostics(res)
  })

  test('an unknown history parameter: 400', async () => {
    const res = await s.fhirFetch('/Patient/_history?foo=bar')
    expect(res.status).toBe(400)
    await diagnostics(res)
  })
})
