// Sparse negations (`:missing`, token `:not`) answered through the resources' search shapes
// (shared/fhir/search/index/shape.ts, query/absent.ts): the same answers as the criteria's definitions,
// dense or sparse, for rows written before the shapes (migration 0027) and for a custom
// SearchParameter added after the data; and a sparse answer reads about its own rows, not every
// resource of the type (EXPLAIN rows, not time: bench/search-mix.ts measures time). Issue 23.
import { beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ADMIN_KEY, useTestServer } from './harness'
import { searchCost } from './plans'
import { getOk, hasCoding, keys, pagedMatchKeys } from './search-expect'

const s = useTestServer({ ENFORCE_REFERENTIAL_INTEGRITY: 'false' })
const url = () => s.config.databaseUrl as string
const CAT = 'http://terminology.hl7.org/CodeSystem/observation-category'
const COMMON = 3000
const observations: any[] = []

const lab = { coding: [{ system: CAT, code: 'laboratory' }] }
let serial = 0
function observation(over: Record<string, unknown>): any {
  return {
    resourceType: 'Observation',
    // a value every Observation has beside its own (as every Synthea EOB has 99999999999): past the
    // values a :not reads one by one (absent.ts VALUE_BUDGET)
    identifier: [
      { system: 'http://example.org/batch', value: '99999999999' },
      { system: 'http://example.org/id', value: `own-${++serial}` },
    ],
    status: 'final',
    category: [lab],
    code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
    subject: { reference: 'Patient/p1' },
    encounter: { reference: 'Encounter/e1' },
    ...over,
  }
}

// The sparse ones, written after the common ones (last in rid order, past the window bounded.ts reads).
const SPARSE: Record<string, unknown>[] = [
  { status: 'amended' },
  { encounter: undefined },
  { category: [lab, { coding: [{ system: CAT, code: 'exam' }] }] },
  { category: [{ text: 'free text only' }] },
  { category: undefined },
  { category: [{ coding: [{ system: 'http://example.org/other', code: 'laboratory' }] }] },
  { valueString: 'a note' },
  { identifier: [{ system: 'http://example.org/id', value: 'lonely' }] },
  { identifier: undefined },
]

async function post(resources: any[]): Promise<void> {
  const bundle = {
    resourceType: 'Bundle',
    type: 'batch',
    entry: resources.map((resource) => ({ resource, request: { method: 'POST', url: resource.resourceType } })),
  }
  const res = await s.fhirFetch('', { method: 'POST', json: bundle })
  expect(res.status).toBe(200)
  const out: any = await res.json()
  for (const [i, e] of out.entry.entries()) {
    expect(e.response.status).toStartWith('201')
    observations.push({ ...resources[i], id: e.response.location.split('/')[1] })
  }
}

beforeAll(async () => {
  for (let i = 0; i < COMMON; i += 500) await post(Array.from({ length: 500 }, () => observation({})))
  await post(SPARSE.map(observation))
}, 300_000)

const codes = (o: any, param: 'category' | 'status') => (param === 'status' ? [{ coding: [{ code: o.status }] }] : (o.category ?? []))
/** The token `:not` of its definition: no row of the parameter matches any value (`code` or `system|code`). */
const notMatching = (param: 'category' | 'status', values: string[]) =>
  keys(
    observations.filter(
      (o) =>
        !codes(o, param).some((cc: any) =>
          values.some((v) => {
            const [system, code] = v.includes('|') ? v.split('|') : [undefined, v]
            return hasCoding(cc, system, code)
          }),
        ),
    ),
  )
async function reindex(url: string): Promise<void> {
  const res = await s.fhirFetch('/$reindex', { method: 'POST', json: { resourceType: 'Parameters', parameter: [{ name: 'url', valueString: url }] } })
  expect(res.status).toBe(200)
  const id = ((await res.json()) as any).parameter[0].valueString
  for (let i = 0; i < 600; i++) {
    const job: any = await (await fetch(`${s.base}/admin/jobs/${id}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).json()
    if (job.state === 'completed') return
    expect(['queued', 'running', 'active', 'waiting']).toContain(job.state)
    await Bun.sleep(100)
  }
  throw new Error(`reindex ${url} did not finish`)
}
const served = async (query: string) => [...(await pagedMatchKeys(s, `/Observation?${query}&_count=1000`))].sort()

async function expectAnswers(): Promise<void> {
  for (const [param, values] of [
    ['status', ['final']],
    ['status', ['amended']],
    ['status', ['final', 'amended']],
    ['category', ['laboratory']],
    ['category', ['exam']],
    ['category', ['laboratory', 'exam']],
    ['category', [`${CAT}|laboratory`]],
  ] as const)
    expect(await served(`${param}:not=${values.join(',')}`)).toEqual(notMatching(param, [...values]))
  const lacking = (f: (o: any) => unknown) => keys(observations.filter((o) => f(o) === undefined))
  const having = (f: (o: any) => unknown) => keys(observations.filter((o) => f(o) !== undefined))
  expect(await served('encounter:missing=true')).toEqual(lacking((o) => o.encounter))
  expect(await served('encounter:missing=false')).toEqual(having((o) => o.encounter))
  const category = (o: any) => (o.category?.length ? true : undefined) // a text-only concept has a row (for :text)
  expect(await served('category:missing=true')).toEqual(lacking(category))
  expect(await served('value-string:missing=false')).toEqual(having((o) => o.valueString))
  expect(await served('value-string:missing=true')).toEqual(lacking((o) => o.valueString))
  const identifiers = (o: any) => (o.identifier ?? []).map((i: any) => i.value)
  for (const values of [['99999999999'], ['99999999999', 'lonely'], ['own-1'], ['99999999999', 'own-2']])
    expect(await served(`identifier:not=${values.join(',')}`)).toEqual(
      keys(observations.filter((o) => !identifiers(o).some((v: string) => values.includes(v)))),
    )
}

describe('sparse negations through search shapes', () => {
  test('dense and sparse :not and :missing answer as defined', async () => {
    expect(notMatching('status', ['final']).length).toBe(1)
    await expectAnswers()
  })

  test('a sparse answer reads about its own rows, not every Observation', async () => {
    for (const query of ['status:not=final', 'encounter:missing=true', 'category:not=laboratory', 'value-string:missing=false']) {
      // the window of resources read in rid order first (bounded.ts: 10 pages of 21) and the shapes;
      // the type's rids less the parameter's rows read over 2 * 3,000
      const cost = await searchCost(url(), `Observation?${query}`)
      expect(cost.rows).toBeLessThan(COMMON / 2)
    }
  })

  test('rows written before the shapes get theirs from migration 0027', async () => {
    await s.sql`alter table idx_fulltext drop column shape`
    await s.sql.unsafe(readFileSync(join(import.meta.dir, '..', 'sql', 'migrations', '0027_search_shapes.sql'), 'utf8'))
    const [{ n }] = await s.sql<{ n: number }[]>`select count(distinct rid)::int as n from idx_fulltext where shape is not null`
    expect(n).toBe(observations.length)
    await expectAnswers()
  })

  test('a custom SearchParameter added after the data: every earlier resource lacks it', async () => {
    const sp = {
      resourceType: 'SearchParameter',
      url: 'http://example.org/SearchParameter/interpretation',
      name: 'interpretation',
      status: 'active',
      code: 'interpretation',
      base: ['Observation'],
      type: 'token',
      expression: 'Observation.interpretation',
      description: 'Interpretation',
    }
    expect((await s.fhirFetch('/SearchParameter', { method: 'POST', json: sp })).status).toBe(201)
    const high = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation', code: 'H' }] }
    await post([observation({ interpretation: [high] })])
    const flagged = observations[observations.length - 1]
    const others = keys(observations.filter((o) => o !== flagged))
    expect(await served('interpretation:missing=false')).toEqual(keys([flagged]))
    expect(await served('interpretation:missing=true')).toEqual(others)
    expect(await served('interpretation:not=H')).toEqual(others)
    expect(await served('interpretation:not=L')).toEqual(keys(observations))
    const b = await getOk(s, '/Observation?interpretation:missing=false&_total=accurate&_count=1')
    expect(b.total).toBe(1)
  })

  test('$reindex moves the resources its new rows give another shape (their full-text rows are kept)', async () => {
    const sp = {
      resourceType: 'SearchParameter',
      url: 'http://example.org/SearchParameter/state',
      name: 'state',
      status: 'active',
      code: 'state',
      base: ['Observation'],
      type: 'token',
      expression: 'Observation.status',
      description: 'The status again',
    }
    expect((await s.fhirFetch('/SearchParameter', { method: 'POST', json: sp })).status).toBe(201)
    expect(await served('state:missing=false')).toEqual([])
    // the amended one alone: it leaves the shape it shared with the others
    await reindex('Observation?status=amended')
    const amended = keys(observations.filter((o) => o.status === 'amended'))
    expect(await served('state:missing=false')).toEqual(amended)
    expect(await served('state:missing=true')).toEqual(keys(observations.filter((o) => o.status !== 'amended')))
    await reindex('Observation?')
    expect(await served('state:missing=false')).toEqual(keys(observations))
    expect(await served('state:missing=true')).toEqual([])
    expect(await served('state:not=final')).toEqual(notMatching('status', ['final']))
  })
})
