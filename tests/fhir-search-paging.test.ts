// Search result handling on real data: paging with next/previous links (also while resources are
// created and updated), _sort, _total, _summary=count, _count=0, _elements, _include per page,
// POST _search, _getpages tokens, and HAPI's 400s for bad searches. Expected answers computed here
// from the loaded files. https://hl7.org/fhir/R4/search.html, https://hl7.org/fhir/R4/http.html#paging
// (reference behaviour: shared/notes/hapi-behaviour.md §2.4, §2.6-2.8)
import { readFileSync } from 'node:fs'
import { beforeAll, describe, expect, test } from 'bun:test'
import { dataPath } from './data'
import { readJson, useTestServer } from './harness'
import { type Loaded, loadR4Examples, loadSynthea, merge, ofType } from './load-data'
import { getOk, linkPath, norm } from './search-expect'

// Resources are loaded one by one in any order, as a bulk load: HAPI's advice is to turn referential
// integrity off for that (docs/server_jpa/performance.md).
const s = useTestServer({ ENFORCE_REFERENTIAL_INTEGRITY: 'false' })
let data: Loaded

beforeAll(async () => {
  data = merge(await loadR4Examples(s), await loadSynthea(s, 10))
}, 60_000)

const LOINC = 'http://loinc.org'
const SUBSETTED = { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED' }

// --- expected answers, from the files ---------------------------------------------------------------

/** Code-point order, as the server's database (collation C) sorts text. */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
const withCode = (code: string) => ofType(data, 'Observation').filter((o) => (o.code?.coding ?? []).some((c: any) => c.system === LOINC && c.code === code))
const ids = (resources: any[]) => resources.map((r) => r.id)
const families = (p: any): string[] =>
  (p.name ?? [])
    .map((n: any) => n.family)
    .filter((f: unknown) => typeof f === 'string' && f.trim() !== '')
    .map(norm)

// --- HTTP -------------------------------------------------------------------------------------------

const get = (path: string, headers?: Record<string, string>) => getOk(s, path, headers)

const matchIds = (bundle: any): string[] => (bundle.entry ?? []).filter((e: any) => e.search?.mode === 'match').map((e: any) => e.resource.id)

/** Follows `relation` links from `path` to the end; `between` runs after each page is read. */
async function walk(path: string, relation = 'next', between?: (n: number, page: any) => Promise<void>): Promise<any[]> {
  const out: any[] = []
  for (let next: string | undefined = path; next; next = linkPath(out[out.length - 1], relation)) {
    if (out.length > 500) throw new Error(`more than 500 pages from ${path}`)
    out.push(await get(next))
    await between?.(out.length, out[out.length - 1])
  }
  return out
}

async function outcome(path: string, init: RequestInit = {}): Promise<{ status: number; diagnostics: string; body: any }> {
  const res = await s.fhirFetch(path, init)
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  expect(body.issue[0].severity).toBe('error')
  return { status: res.status, diagnostics: body.issue.map((i: any) => i.diagnostics ?? '').join('\n'), body }
}

async function createObservation(code: string, subject: string): Promise<any> {
  const res = await s.fhirFetch('/Observation', {
    method: 'POST',
    json: { resourceType: 'Observation', status: 'final', code: { coding: [{ system: LOINC, code }] }, subject: { reference: subject } },
  })
  expect(res.status).toBe(201)
  return readJson(res)
}

async function touch(resource: any): Promise<void> {
  const changed = { ...resource, note: [...(resource.note ?? []), { text: `touched ${crypto.randomUUID()}` }] }
  const res = await s.fhirFetch(`/${resource.resourceType}/${resource.id}`, { method: 'PUT', json: changed })
  expect(res.status).toBe(200)
  await res.arrayBuffer()
}

function counts(values: string[]): Map<string, number> {
  const m = new Map<string, number>()
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1)
  return m
}

// --- paging -----------------------------------------------------------------------------------------

describe('paging with _count=7', () => {
  test('next links to the end: every match exactly once, pages of 7, in the order of a single page', async () => {
    const expected = withCode('8302-2')
    expect(expected.length).toBeGreaterThan(14)
    const pages = await walk(`/Observation?code=${LOINC}|8302-2&_count=7`)
    expect(pages.length).toBe(Math.ceil(expected.length / 7))
    for (const p of pages.slice(0, -1)) expect(matchIds(p).length).toBe(7)
    const walked = pages.flatMap(matchIds)
    expect([...walked].sort(byText)).toEqual(ids(expected).sort(byText))
    const single = await get(`/Observation?code=${LOINC}|8302-2&_count=200`)
    expect(walked).toEqual(matchIds(single))
    expect(linkPath(pages[0], 'previous')).toBeUndefined()
    expect(linkPath(pages[pages.length - 1], 'next')).toBeUndefined()
  })

  test('previous links from the last page back to the first give the same pages', async () => {
    const forward = await walk(`/Observation?code=${LOINC}|8302-2&_count=7`)
    expect(forward.length).toBeGreaterThan(2)
    const last = linkPath(forward[forward.length - 2], 'next') as string
    const backward = await walk(last, 'previous')
    expect(backward.map(matchIds)).toEqual(forward.map(matchIds).reverse())
  })

  for (const sort of ['', '&_sort=_id']) {
    test(`creates and updates between page fetches${sort}: every original match once, no duplicates`, async () => {
      const code = sort ? '39156-5' : '29463-7'
      const expected = withCode(code)
      expect(expected.length).toBeGreaterThan(21)
      const subject = expected[0].subject.reference
      const seen = new Set<string>()
      const created: string[] = []
      const pages = await walk(`/Observation?code=${LOINC}|${code}&_count=7${sort}`, 'next', async (n, page) => {
        for (const id of matchIds(page)) seen.add(id)
        if (n > 2) return
        created.push((await createObservation(code, subject)).id)
        await touch(expected.find((o) => seen.has(o.id))) // already seen
        await touch(expected.find((o) => !seen.has(o.id))) // not yet seen
      })
      const walked = pages.flatMap(matchIds)
      const times = counts(walked)
      expect([...times.entries()].filter(([, n]) => n > 1)).toEqual([])
      for (const o of expected) expect([o.id, times.get(o.id)]).toEqual([o.id, 1])
      for (const id of walked) expect(expected.some((o) => o.id === id) || created.includes(id)).toBe(true)
      if (sort) expect(walked).toEqual([...walked].sort(byText))
    })
  }

  test('_sort=-_lastUpdated: updating a resource already seen does not show it again', async () => {
    const code = '55284-4'
    const expected = withCode(code)
    expect(expected.length).toBeGreaterThan(14)
    const seen = new Set<string>()
    const pages = await walk(`/Observation?code=${LOINC}|${code}&_count=7&_sort=-_lastUpdated`, 'next', async (n, page) => {
      for (const id of matchIds(page)) seen.add(id)
      if (n === 1) await touch(expected.find((o) => o.id === matchIds(page)[3]))
    })
    const times = counts(pages.flatMap(matchIds))
    expect([...times.entries()].filter(([, n]) => n > 1)).toEqual([])
  })

  test('_sort=-_lastUpdated: updating a resource not yet seen does not drop it (no gaps while paging)', async () => {
    const code = '72166-2'
    const expected = withCode(code)
    expect(expected.length).toBeGreaterThan(14)
    const seen = new Set<string>()
    let updated: string | undefined
    const pages = await walk(`/Observation?code=${LOINC}|${code}&_count=7&_sort=-_lastUpdated`, 'next', async (n, page) => {
      for (const id of matchIds(page)) seen.add(id)
      if (n === 1) {
        const unseen = expected.find((o) => !seen.has(o.id))
        updated = unseen.id
        await touch(unseen)
      }
    })
    const times = counts(pages.flatMap(matchIds))
    expect([...times.entries()].filter(([, n]) => n > 1)).toEqual([])
    expect([updated, times.get(updated as string)]).toEqual([updated, 1])
    expect([...times.keys()].sort(byText)).toEqual(ids(expected).sort(byText))
  })
})

// --- sort -------------------------------------------------------------------------------------------

describe('_sort', () => {
  const patients = () => ofType(data, 'Patient')
  const walkIds = async (query: string) => (await walk(`/Patient?${query}&_count=7`)).flatMap(matchIds)
  const byId = () => new Map(patients().map((p) => [p.id, p]))

  test('_sort=_id', async () => {
    expect(await walkIds('_sort=_id')).toEqual(ids(patients()).sort(byText))
    expect(await walkIds('_sort=-_id')).toEqual(ids(patients()).sort(byText).reverse())
  })

  test('_sort=-_lastUpdated: newest first, every patient once', async () => {
    const pages = await walk('/Patient?_sort=-_lastUpdated&_count=7')
    const entries = pages.flatMap((p) => p.entry.map((e: any) => e.resource))
    expect(ids(entries).sort(byText)).toEqual(ids(patients()).sort(byText))
    const stamps = entries.map((r: any) => Date.parse(r.meta.lastUpdated))
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]).toBeLessThanOrEqual(stamps[i - 1])
  })

  test('_sort=family and -family (string): lowest family ascending, highest descending, patients without one last', async () => {
    const map = byId()
    for (const desc of [false, true]) {
      const walked = await walkIds(`_sort=${desc ? '-' : ''}family`)
      expect([...walked].sort(byText)).toEqual(ids(patients()).sort(byText))
      const key = (id: string) => {
        const f = families(map.get(id)).sort(byText)
        return f.length === 0 ? null : desc ? f[f.length - 1] : f[0]
      }
      const keysInOrder = walked.map(key)
      const firstNull = keysInOrder.indexOf(null)
      if (firstNull >= 0) expect(keysInOrder.slice(firstNull).every((k) => k === null)).toBe(true)
      const present = keysInOrder.filter((k): k is string => k !== null)
      expect(present).toEqual([...present].sort(desc ? (a, b) => byText(b, a) : byText))
    }
  })

  test('_sort=family,_id gives exactly the order computed from the files', async () => {
    const key = (p: any) => families(p).sort(byText)[0] ?? null
    const expected = [...patients()].sort((a, b) => {
      const ka = key(a)
      const kb = key(b)
      if (ka !== kb) return ka === null ? 1 : kb === null ? -1 : byText(ka, kb)
      return byText(a.id, b.id)
    })
    expect(await walkIds('_sort=family,_id')).toEqual(ids(expected))
  })

  test('_sort=gender,-_id (token, then id descending)', async () => {
    const expected = [...patients()].sort((a, b) => {
      if (a.gender !== b.gender) return a.gender === undefined ? 1 : b.gender === undefined ? -1 : byText(a.gender, b.gender)
      return byText(b.id, a.id)
    })
    expect(await walkIds('_sort=gender,-_id')).toEqual(ids(expected))
  })

  // With a criterion on the sort parameter every match has a date, and the server reads the date index
  // in order (ordered-scan.ts); without one it sorts all matches. Both must give the same order.
  test('_sort=date and -date with a date criterion: the order of the plain sort, every page forward and backward', async () => {
    const code = `${LOINC}|8302-2`
    const members = new Set((await walk(`/Observation?code=${code}&date=ge2015-01-01&_sort=_id&_count=50`)).flatMap(matchIds))
    expect(members.size).toBeGreaterThan(14)
    for (const dir of ['-', '']) {
      const plain = (await walk(`/Observation?code=${code}&_sort=${dir}date&_count=50`)).flatMap(matchIds).filter((id) => members.has(id))
      const forward = await walk(`/Observation?code=${code}&date=ge2015-01-01&_sort=${dir}date&_count=7`)
      expect(forward.flatMap(matchIds)).toEqual(plain)
      const backward = await walk(linkPath(forward[forward.length - 2], 'next') as string, 'previous')
      expect(backward.map(matchIds)).toEqual(forward.map(matchIds).reverse())
    }
  })

  test('an unknown sort parameter is 400', async () => {
    const { status } = await outcome('/Patient?_sort=nonsense')
    expect(status).toBe(400)
  })
})

// --- totals and subsets -------------------------------------------------------------------------------

describe('_total, _summary=count, _count=0, _elements', () => {
  const code = '8302-2'

  test('_total=accurate gives the total on a multi-page result; the default gives none or the right one', async () => {
    const expected = withCode(code).length
    const accurate = await get(`/Observation?code=${LOINC}|${code}&_count=7&_total=accurate`)
    expect(accurate.total).toBe(expected)
    expect(matchIds(accurate).length).toBe(7)
    const dflt = await get(`/Observation?code=${LOINC}|${code}&_count=7`)
    if (dflt.total !== undefined) expect(dflt.total).toBe(expected)
    // a later page with _total=accurate still counts everything
    const second = await get(linkPath(accurate, 'next') as string)
    if (second.total !== undefined) expect(second.total).toBe(expected)
  })

  test('the default total is present on a single-page result; _total=none leaves it out', async () => {
    const expected = withCode(code).length
    expect((await get(`/Observation?code=${LOINC}|${code}&_count=200`)).total).toBe(expected)
    expect((await get(`/Observation?code=${LOINC}|${code}&_count=200&_total=none`)).total).toBeUndefined()
  })

  test('_summary=count and _count=0 give only the total', async () => {
    const expected = withCode(code).length
    for (const q of ['_summary=count', '_count=0']) {
      const b = await get(`/Observation?code=${LOINC}|${code}&${q}`)
      expect(b.total).toBe(expected)
      expect(b.entry ?? []).toEqual([])
      expect(linkPath(b, 'next')).toBeUndefined()
    }
  })

  test('_elements=id returns id only, tagged SUBSETTED, and the next link keeps it', async () => {
    const first = await get(`/Observation?code=${LOINC}|${code}&_elements=id&_count=7`)
    const second = await get(linkPath(first, 'next') as string)
    for (const b of [first, second]) {
      expect(b.entry.length).toBe(7)
      for (const e of b.entry) {
        expect(Object.keys(e.resource).every((k) => ['resourceType', 'id', 'meta'].includes(k))).toBe(true)
        expect(e.resource.meta.tag).toContainEqual(SUBSETTED)
      }
    }
  })
})

// --- bad searches -------------------------------------------------------------------------------------

describe('bad searches', () => {
  test('an unknown parameter is 400 HAPI-0524 (BaseStorageDao.translateRawParameters), listing every standard Patient parameter', async () => {
    const { status, diagnostics } = await outcome('/Patient?nonsense=1')
    expect(status).toBe(400)
    expect(diagnostics).toContain('HAPI-0524')
    expect(diagnostics).toContain('"nonsense"')
    const bundle = JSON.parse(readFileSync(dataPath('r4-search-parameters.json'), 'utf8'))
    const patientParams: string[] = bundle.entry
      .map((e: any) => e.resource)
      .filter((sp: any) => sp.base.includes('Patient'))
      .map((sp: any) => sp.code)
    expect(patientParams.length).toBeGreaterThan(10)
    const listed =
      /\[([^\]]*)\]/
        .exec(diagnostics.slice(diagnostics.indexOf('HAPI-0524')))?.[1]
        .split(',')
        .map((x) => x.trim()) ?? []
    for (const code of patientParams) expect(listed).toContain(code)
  })

  test('Prefer: handling=lenient ignores the unknown parameter', async () => {
    const lenient = await get('/Patient?nonsense=1&gender=female&_count=200', { prefer: 'handling=lenient' })
    const strict = await get('/Patient?gender=female&_count=200')
    expect(matchIds(lenient).sort(byText)).toEqual(matchIds(strict).sort(byText))
    expect(matchIds(lenient).length).toBe(ofType(data, 'Patient').filter((p) => p.gender === 'female').length)
  })

  test('a token value with two "|" is 400', async () => {
    expect((await outcome('/Patient?identifier=a|b|c')).status).toBe(400)
  })

  test('a chain of 4 links is 400 HAPI-2007; 3 links are fine', async () => {
    const three = await s.fhirFetch('/Observation?subject:Patient.organization.partof.name=x')
    expect(three.status).toBe(200)
    await three.arrayBuffer()
    const { status, diagnostics } = await outcome('/Observation?subject:Patient.organization.partof.partof.name=x')
    expect(status).toBe(400)
    expect(diagnostics).toContain('HAPI-2007')
  })

  test('a malformed _has is 400 HAPI-1942', async () => {
    for (const q of ['_has:Observation:subject=x', '_has:Observation=x', '_has:Nonsense:subject:code=x']) {
      const { status, diagnostics } = await outcome(`/Patient?${q}`)
      expect([q, status]).toEqual([q, 400])
      expect(diagnostics).toContain('HAPI-1942')
    }
  })
})

// --- POST _search and _getpages ---------------------------------------------------------------------------

describe('POST _search and _getpages', () => {
  const form = (body: string, query = '') =>
    s.fhirFetch(`/Patient/_search${query}`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })

  test('POST /Patient/_search with a form body equals the GET search, and its next link works', async () => {
    const get1 = await get('/Patient?gender=female&_sort=_id&_count=3')
    const res = await form('gender=female&_sort=_id&_count=3')
    expect(res.status).toBe(200)
    const post1 = await readJson(res)
    expect(matchIds(post1)).toEqual(matchIds(get1))
    expect(matchIds(post1).length).toBe(3)
    const next = linkPath(post1, 'next')
    expect(next).toBeDefined()
    expect(matchIds(await get(next as string))).toEqual(matchIds(await get(linkPath(get1, 'next') as string)))
  })

  test('query-string and form parameters are merged', async () => {
    const res = await form('_sort=_id&_count=3', '?gender=female')
    expect(res.status).toBe(200)
    expect(matchIds(await readJson(res))).toEqual(matchIds(await get('/Patient?gender=female&_sort=_id&_count=3')))
  })

  test('a garbled _getpages token is 410', async () => {
    const first = await get(`/Observation?code=${LOINC}|8302-2&_count=7`)
    const next = new URL(`http://x${linkPath(first, 'next')}`)
    const token = next.searchParams.get('_getpages') as string
    for (const bad of ['not-a-search-id', token.slice(0, Math.floor(token.length / 2)), `${token}x`]) {
      next.searchParams.set('_getpages', bad)
      const { status } = await outcome(`${next.pathname}${next.search}`)
      expect([bad, status]).toEqual([bad, 410])
    }
  })

  test('a well-formed but altered _getpages token is 410 (the server only serves tokens it issued)', async () => {
    const first = await get(`/Observation?code=${LOINC}|8302-2&_count=7`)
    const next = new URL(`http://x${linkPath(first, 'next')}`)
    const token = next.searchParams.get('_getpages') as string
    // alter the last number inside the token (the cursor position in a JSON token), keeping it well-formed
    let altered: string
    try {
      const text = Buffer.from(token, 'base64url').toString('utf8')
      JSON.parse(text)
      altered = Buffer.from(
        text.replace(/\d+(?=\D*$)/, (d) => String(Number(d) + 1)),
        'utf8',
      ).toString('base64url')
    } catch {
      altered = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')
    }
    expect(altered).not.toBe(token)
    next.searchParams.set('_getpages', altered)
    const res = await s.fhirFetch(`${next.pathname}${next.search}`)
    await res.arrayBuffer()
    expect(res.status).toBe(410)
  })
})
