// The search shapes that ran for seconds to minutes on Synthea x10 as loaded (no statistics: autovacuum
// is off, and a load outruns it anyway), each checked twice: the answer, computed here from the loaded
// files, and the plans PostgreSQL makes for its statements as the server runs them (generic plans),
// which must stay linear in what they read: no nested loop over a scan that is not one index descent
// per row, and every per-row probe (a SubPlan) one descent of a rid key. Not timed (bench/search-mix.ts).
// Issue 23; the shapes are in bounded.ts and compile.ts (probes).
import { beforeAll, describe, expect, test } from 'bun:test'
import { createResource, useTestServer } from './harness'
import { type Loaded, loadSynthea, ofType } from './load-data'
import { type PlanNode, planNodes, planOf, planShape, searchCost, searchStatements } from './plans'
import { getOk, hasCoding, keys, matchKeysOf } from './search-expect'
import { normalizeString } from '../shared/fhir/search/types/string'

// Loaded one resource at a time, as a bulk load without jobs: no ANALYZE runs (db/analyze.ts runs after jobs).
const s = useTestServer({ ENFORCE_REFERENTIAL_INTEGRITY: 'false' })
let data: Loaded
const url = () => s.config.databaseUrl as string

beforeAll(async () => {
  data = await loadSynthea(s, 10)
  // One Observation that is not final, so that :not has an answer.
  const amended = await createResource(s, {
    resourceType: 'Observation',
    status: 'amended',
    category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'exam' }] }],
    code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
  })
  data.resources.set(`Observation/${amended.id}`, amended)
}, 600_000)

/**
 * What makes a plan super-linear: a nested loop whose inner side is not an index lookup per outer row
 * (a materialised or scanned set read again for every row), or a per-row probe (SubPlan, not a hashed
 * one, which is run once) that reads an index table other than through its rid key.
 */
function problems(p: PlanNode, inSubPlan = false, parent?: PlanNode): string[] {
  const out: string[] = []
  // a hashed SubPlan (its parent's condition reads `hashed SubPlan n`) is run once and looked up per row
  const conditions = parent ? JSON.stringify([(parent as any).Filter, (parent as any)['Index Cond'], (parent as any)['Recheck Cond']]) : ''
  const hashed = p['Parent Relationship'] === 'SubPlan' && conditions.includes(`hashed ${p['Subplan Name']})`)
  const sub = hashed ? false : inSubPlan || p['Parent Relationship'] === 'SubPlan'
  if (p['Node Type'] === 'Nested Loop') {
    const inner = p.Plans?.[1]
    if (!inner || !lookup(inner)) out.push(`nested loop over ${inner ? planShape(inner) : '?'}`)
  }
  const rel = p['Relation Name'] ?? ''
  // a rid key, or the reference target key from the row's own id (a _has probed on its target), or the
  // token lookup from a Patient's id (the rows of one code of that Patient: a _has on Patients by a code)
  const keyed =
    (p['Index Name'] ?? '').endsWith('_rid') ||
    p['Index Name'] === 'idx_reference_target' ||
    (p['Index Name'] === 'idx_token_lookup' && /\(patient = r0(_\d+)?\.id\)/.test(String((p as any)['Index Cond']))) ||
    // a step of a skip scan over the distinct values of a code (query/absent.ts): the next value, one descent
    (p['Index Name'] === 'idx_token_lookup' && /\(value > v\.value\)/.test(String((p as any)['Index Cond']))) ||
    (p['Index Name'] === 'idx_fulltext_shape' && /\(shape > v\.shape\)/.test(String((p as any)['Index Cond'])))
  if (sub && rel.startsWith('idx_') && !keyed) out.push(`per-row probe reads ${planShape(p)}`)
  for (const c of p.Plans ?? []) out.push(...problems(c, sub, p))
  return out
}

/** An index lookup per outer row (a bitmap one included, or a join of such lookups), not a set read again for every row. */
function lookup(p: PlanNode): boolean {
  // a Result may gate its one input on per-row conditions (SubPlans, checked apart): still one lookup
  const input = (n: PlanNode) => (n.Plans ?? []).filter((c) => !['SubPlan', 'InitPlan'].includes(c['Parent Relationship'] ?? ''))
  while (['Result', 'Limit', 'Aggregate'].includes(p['Node Type']) && input(p).length === 1) p = input(p)[0]
  if (['Index Scan', 'Index Only Scan'].includes(p['Node Type'])) return true
  // the rows of the previous step of a recursive walk of an index (query/absent.ts: a shape's rids, a batch a step)
  if (p['Node Type'] === 'WorkTable Scan') return true
  if (p['Node Type'] === 'Bitmap Heap Scan') return p.Plans?.[0]['Node Type'] === 'Bitmap Index Scan'
  // a subquery kept apart (OFFSET 0) over a lookup; its per-row probes (SubPlans) are checked apart
  const own = (p.Plans ?? []).filter((c) => c['Parent Relationship'] !== 'SubPlan')
  return ['Nested Loop', 'Subquery Scan', 'CTE Scan', 'Recursive Union'].includes(p['Node Type']) && own.length > 0 && own.every(lookup)
}

/** The plans of the first page's statements of `path`, as the server's pool plans them, and what is wrong with them. */
async function planProblems(path: string): Promise<string[]> {
  const { statements, custom } = await searchStatements(url(), path)
  expect(statements.length).toBeGreaterThan(0)
  const out: string[] = []
  for (const st of statements) out.push(...problems(await planOf(url(), st, custom)))
  return out
}

const keysOf = (rs: any[]) => rs.map((r) => `${r.resourceType}/${r.id}`).sort()
const first = (keys: string[], n = 20) => keys.slice(0, n)
const byRid = async (keys: string[]) => {
  // the server's keyset order is by rid; the files do not know rids
  const rows = await s.sql<{ k: string }[]>`select res_type || '/' || id as k from resource where res_type || '/' || id = any(${keys}::text[]) order by rid`
  return rows.map((r) => r.k)
}
const firstPage = async (path: string) => {
  const b = await getOk(s, `${path}&_count=20`)
  return keys((b.entry ?? []).filter((e: any) => e.search?.mode === 'match').map((e: any) => e.resource))
}

describe('shapes that blew up without statistics stay linear, with the same answers', () => {
  test('Observation?status:not=final (was a nested-loop anti join over every pair)', async () => {
    const expected = keysOf(ofType(data, 'Observation').filter((o) => o.status !== 'final'))
    expect(expected.length).toBeGreaterThan(0)
    expect(await firstPage('/Observation?status:not=final')).toEqual(expected)
    expect(await planProblems('Observation?status:not=final')).toEqual([])
  })

  test('Observation?category:not=vital-signs,laboratory,survey', async () => {
    const cats = ['vital-signs', 'laboratory', 'survey']
    const expected = keysOf(ofType(data, 'Observation').filter((o) => !(o.category ?? []).some((c: any) => cats.some((k) => hasCoding(c, undefined, k)))))
    expect(await firstPage('/Observation?category:not=vital-signs,laboratory,survey')).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems('Observation?category:not=vital-signs,laboratory,survey')).toEqual([])
  })

  test('ExplanationOfBenefit?created=lt2014&status=active (a date beside a common token)', async () => {
    const expected = keysOf(ofType(data, 'ExplanationOfBenefit').filter((e) => e.status === 'active' && String(e.created).slice(0, 4) < '2014'))
    expect(expected.length).toBeGreaterThan(0)
    expect(await firstPage('/ExplanationOfBenefit?created=lt2014&status=active')).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems('ExplanationOfBenefit?created=lt2014&status=active')).toEqual([])
  })

  test('Observation?status=final&_tag=synthea-5-2019 (every criterion common: read in rid order up to the page)', async () => {
    const tagged = (o: any) => (o.meta?.tag ?? []).some((t: any) => t.code === 'synthea-5-2019')
    const expected = keysOf(ofType(data, 'Observation').filter((o) => o.status === 'final' && tagged(o)))
    expect(expected.length).toBeGreaterThan(1000) // over the budget each (bounded.ts DRIVE_BUDGET)
    expect(await firstPage('/Observation?status=final&_tag=synthea-5-2019')).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems('Observation?status=final&_tag=synthea-5-2019')).toEqual([])
  })

  test('Observation?value-quantity=<value> (a rare value)', async () => {
    const o = ofType(data, 'Observation').find((x) => x.valueQuantity?.value === 117.64) ?? ofType(data, 'Observation').find((x) => x.valueQuantity)
    const v = o.valueQuantity.value
    const expected = keysOf(ofType(data, 'Observation').filter((x) => x.valueQuantity?.value === v))
    // the search value's precision is its own digits: the same number as written matches exactly
    expect(await firstPage(`/Observation?value-quantity=${v}`)).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems(`Observation?value-quantity=${v}`)).toEqual([])
    // the value is a range of the quantity lookup: its rows, not every row of the code (over 1,000 here)
    expect((await searchCost(url(), `Observation?value-quantity=${v}`)).rows).toBeLessThan(50 + 10 * expected.length)
    // a one-sided range too (ge: one comparison on the upper end, no `is null or` for an open Range)
    const top = Math.max(...ofType(data, 'Observation').map((x) => x.valueQuantity?.value ?? 0))
    const above = keysOf(ofType(data, 'Observation').filter((x) => x.valueQuantity?.value >= top))
    expect(await firstPage(`/Observation?value-quantity=ge${top}`)).toEqual(first(await byRid(above)).sort())
    expect((await searchCost(url(), `Observation?value-quantity=ge${top}`)).rows).toBeLessThan(50 + 10 * above.length)
  })

  test("Observation?_lastUpdated=gt<tomorrow> (a range of the resources' update key, not every Observation read)", async () => {
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)
    expect(await firstPage(`/Observation?_lastUpdated=gt${tomorrow}`)).toEqual([])
    expect((await firstPage(`/Observation?_lastUpdated=le${tomorrow}`)).length).toBe(20)
    expect((await searchCost(url(), `Observation?_lastUpdated=gt${tomorrow}`)).rows).toBeLessThan(50)
    expect(await planProblems(`Observation?_lastUpdated=gt${tomorrow}`)).toEqual([])
  })

  test('Observation?code:text=<a rare display> (a range of the text key, not every code row read)', async () => {
    const texts = (o: any) => [...(o.code?.coding ?? []).map((c: any) => c.display), o.code?.text].filter((t) => typeof t === 'string').map(normalizeString)
    const counts = new Map<string, number>()
    for (const o of ofType(data, 'Observation')) for (const t of new Set(texts(o))) counts.set(t, (counts.get(t) ?? 0) + 1)
    const [rare] = [...counts].filter(([t, n]) => n <= 3 && /^[A-Z]{4}/.test(t)).map(([t]) => t)
    const prefix = rare.slice(0, 10)
    const expected = keysOf(ofType(data, 'Observation').filter((o) => texts(o).some((t) => t.startsWith(prefix))))
    expect(expected.length).toBeGreaterThan(0)
    const path = `Observation?code:text=${encodeURIComponent(prefix.toLowerCase())}`
    expect(await firstPage(`/${path}`)).toEqual(first(await byRid(expected)).sort())
    expect((await searchCost(url(), path)).rows).toBeLessThan(50 + 10 * expected.length)
    expect(await planProblems(path)).toEqual([])
  })

  test('Observation?date=<year> (eq: the date index read for that year only, both ends an index bound)', async () => {
    const year = '2015'
    const expected = keysOf(ofType(data, 'Observation').filter((o) => typeof o.effectiveDateTime === 'string' && o.effectiveDateTime.startsWith(year)))
    expect(await firstPage(`/Observation?date=${year}`)).toEqual(first(await byRid(expected)).sort())
    const { statements } = await searchStatements(url(), `Observation?date=${year}`)
    const conds = (await Promise.all(statements.map((st) => planOf(url(), st, false))))
      .flatMap(planNodes)
      .filter((p) => p['Index Name'] === 'idx_date_lookup' || p['Index Name'] === 'idx_date_sort')
      .map((p: any) => String(p['Index Cond']))
    expect(conds.length).toBeGreaterThan(0)
    // the start's range on the lookup, or the end's on the sort key: bounded both ways
    for (const c of conds) expect(c).toMatch(/lo >= .*lo < |hi >= .*hi < /)
  })

  test('Patient?_has:Observation:patient:code=8302-2&_total=accurate', async () => {
    const patients = new Set(
      ofType(data, 'Observation')
        .filter((o) => hasCoding(o.code, undefined, '8302-2'))
        .map((o) => String(o.subject?.reference ?? '').replace(/^urn:uuid:/, 'Patient/')),
    )
    const expected = keysOf(ofType(data, 'Patient').filter((p) => patients.has(`Patient/${p.id}`)))
    expect(expected.length).toBeGreaterThan(0)
    const b = await matchKeysOf(s, '/Patient?_has:Observation:patient:code=8302-2&_count=200')
    expect(b).toEqual(expected)
    expect(await planProblems('Patient?_has:Observation:patient:code=8302-2&_total=accurate')).toEqual([])
    // the sources' references read by their rids, the sources themselves not looked up (their index rows
    // are those of live resources)
    const { plans } = await searchCost(s.config.databaseUrl as string, 'Patient?_has:Observation:patient:code=8302-2', { text: true })
    expect(plans.flat().filter((line) => / on resource r1\b/.test(line) && !/never executed/.test(line))).toEqual([])
  })

  test('Observation?patient:Patient.gender=male (a chain: its targets found once, not per Observation)', async () => {
    const male = new Set(
      ofType(data, 'Patient')
        .filter((p) => p.gender === 'male')
        .map((p) => `Patient/${p.id}`),
    )
    const expected = keysOf(ofType(data, 'Observation').filter((o) => male.has(o.subject?.reference)))
    expect(expected.length).toBeGreaterThan(20)
    expect(await firstPage('/Observation?patient:Patient.gender=male')).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems('Observation?patient:Patient.gender=male')).toEqual([])
  })

  test('Encounter?_has:Observation:encounter:status=final (its sources found once, not per Encounter)', async () => {
    const refs = new Set(
      ofType(data, 'Observation')
        .filter((o) => o.status === 'final')
        .map((o) => o.encounter?.reference),
    )
    const expected = keysOf(ofType(data, 'Encounter').filter((e) => refs.has(`Encounter/${e.id}`)))
    expect(await firstPage('/Encounter?_has:Observation:encounter:status=final')).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems('Encounter?_has:Observation:encounter:status=final')).toEqual([])
  })

  test('Observation?code-value-quantity=8302-2$gt150 (a composite probe reads its rid key)', async () => {
    const expected = keysOf(ofType(data, 'Observation').filter((o) => hasCoding(o.code, undefined, '8302-2') && o.valueQuantity?.value > 150))
    expect(expected.length).toBeGreaterThan(0)
    expect(await firstPage('/Observation?code-value-quantity=8302-2%24gt150')).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems('Observation?code-value-quantity=8302-2%24gt150')).toEqual([])
  })

  test('Observation?code=...&date=ge2015&_sort=-date (date order read from the index, each resource probed)', async () => {
    const expected = ofType(data, 'Observation')
      .filter((o) => hasCoding(o.code, 'http://loinc.org', '8302-2') && typeof o.effectiveDateTime === 'string' && o.effectiveDateTime >= '2015')
      .sort((a, b) => Date.parse(b.effectiveDateTime) - Date.parse(a.effectiveDateTime))
    expect(expected.length).toBeGreaterThan(0)
    const b = await getOk(s, '/Observation?code=http://loinc.org|8302-2&date=ge2015&_sort=-date&_count=50')
    const served = (b.entry ?? []).map((e: any) => Date.parse(e.resource.effectiveDateTime))
    expect(served).toEqual(expected.slice(0, 50).map((o) => Date.parse(o.effectiveDateTime)))
    expect(await planProblems('Observation?code=http://loinc.org|8302-2&date=ge2015&_sort=-date&_count=50')).toEqual([])
  })

  test('_total=accurate on a common value counts every match', async () => {
    const expected = ofType(data, 'Observation').filter((o) => o.status === 'final').length
    const res = await s.fhirFetch('/Observation?status=final&_total=accurate&_count=1')
    expect(((await res.json()) as any).total).toBe(expected)
    expect(await planProblems('Observation?status=final&_total=accurate')).toEqual([])
  })
  test('Observation?encounter:missing=true (a sparse negation: read from the complement, not a probe per Observation)', async () => {
    const expected = keysOf(ofType(data, 'Observation').filter((o) => o.encounter === undefined))
    expect(await firstPage('/Observation?encounter:missing=true')).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems('Observation?encounter:missing=true')).toEqual([])
  })

  test('Observation?category=laboratory&code=8302-2 (two common values, no common match: their rids intersected)', async () => {
    const expected = keysOf(
      ofType(data, 'Observation').filter(
        (o) => hasCoding(o.code, undefined, '8302-2') && (o.category ?? []).some((c: any) => hasCoding(c, undefined, 'laboratory')),
      ),
    )
    expect(await firstPage('/Observation?category=laboratory&code=8302-2')).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems('Observation?category=laboratory&code=8302-2')).toEqual([])
    expect(await planProblems('Observation?category=laboratory&code=8302-2&_total=accurate')).toEqual([])
  })

  test('Observation?status=final&_sort=-_lastUpdated (a common value sorted: the update index read in order)', async () => {
    const rows = await s.sql<{ k: string }[]>`select 'Observation/' || id as k from resource
      where res_type = 'Observation' and not deleted and content::jsonb->>'status' = 'final' order by last_updated desc, rid asc limit 20`
    const b = await getOk(s, '/Observation?status=final&_sort=-_lastUpdated&_count=20')
    expect((b.entry ?? []).map((e: any) => `Observation/${e.resource.id}`)).toEqual(rows.map((r) => r.k))
    expect(await planProblems('Observation?status=final&_sort=-_lastUpdated')).toEqual([])
    expect(await planProblems('Observation?status=final&_sort=_id')).toEqual([])
  })

  test('Patient?_has:Observation:subject:status=final (a common inner criterion on a small type: each Patient probed)', async () => {
    const refs = new Set(
      ofType(data, 'Observation')
        .filter((o) => o.status === 'final')
        .map((o) => o.subject?.reference),
    )
    const expected = keysOf(ofType(data, 'Patient').filter((p) => refs.has(`Patient/${p.id}`)))
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeysOf(s, '/Patient?_has:Observation:subject:status=final&_count=200')).toEqual(expected)
    expect(await planProblems('Patient?_has:Observation:subject:status=final')).toEqual([])
    // each Patient's sources with the code are one range of the token lookup (its patient column), not
    // every source of the Patient read and checked (15,700 buffers a page for a rarer code on Synthea x10)
    const { statements, custom } = await searchStatements(url(), 'Patient?_has:Observation:subject:status=final')
    const nodes = (await Promise.all(statements.map((st) => planOf(url(), st, custom)))).flatMap(planNodes)
    expect(nodes.some((p: any) => p['Index Name'] === 'idx_token_lookup' && /\(patient = r0(_\d+)?\.id\)/.test(String(p['Index Cond'])))).toBe(true)
  })
  test('Observation?category=laboratory&_sort=-date (a common value sorted by a date: the date index read in order)', async () => {
    const lab = ofType(data, 'Observation').filter((o) => (o.category ?? []).some((c: any) => hasCoding(c, undefined, 'laboratory')))
    const latest = Math.max(...lab.map((o) => Date.parse(o.effectiveDateTime ?? o.issued)))
    const b = await getOk(s, '/Observation?category=laboratory&_sort=-date&_count=20')
    const served = (b.entry ?? []).map((e: any) => e.resource)
    expect(served.length).toBe(20)
    expect(served.every((o: any) => (o.category ?? []).some((c: any) => hasCoding(c, undefined, 'laboratory')))).toBe(true)
    const dates = served.map((o: any) => Date.parse(o.effectiveDateTime))
    expect(dates[0]).toBe(latest)
    expect(dates).toEqual([...dates].sort((x, y) => y - x))
    expect(await planProblems('Observation?category=laboratory&_sort=-date')).toEqual([])
    expect(await planProblems('Observation?category=laboratory&_sort=date')).toEqual([])
  })
})

describe('a driver under the budget, in rid order', () => {
  test('Observation?code=8302-2 (its candidates sorted by rid first: the lookups stop at the page)', async () => {
    const expected = keysOf(ofType(data, 'Observation').filter((o) => hasCoding(o.code, 'http://loinc.org', '8302-2')))
    expect(expected.length).toBeGreaterThan(40)
    const path = 'Observation?code=http://loinc.org|8302-2'
    expect(await firstPage(`/${path}`)).toEqual(first(await byRid(expected)).sort())
    // the resource rows looked up by rid: a page and the one that tells a next page exists, not every candidate
    const { plans } = await searchCost(url(), `${path}&_count=20`, { text: true })
    const lookups = plans
      .flat()
      .map((line) => /Index Scan using (?:resource_pkey|resource_type_rid) on resource r0\S* .*actual time=\S+ rows=\d+ loops=(\d+)/.exec(line))
      .filter((m) => m !== null)
      .map((m) => Number(m[1]))
    expect(lookups.length).toBeGreaterThan(0)
    expect(Math.max(...lookups)).toBeLessThanOrEqual(21)
  })
})

describe('a chain beside another criterion', () => {
  test("Observation?patient:Patient.gender=male&code=8302-2 (the chain's targets found once for the statement)", async () => {
    const male = new Set(
      ofType(data, 'Patient')
        .filter((p) => p.gender === 'male')
        .map((p) => `Patient/${p.id}`),
    )
    const expected = keysOf(ofType(data, 'Observation').filter((o) => male.has(o.subject?.reference) && hasCoding(o.code, undefined, '8302-2')))
    expect(expected.length).toBeGreaterThan(0)
    const path = 'Observation?patient:Patient.gender=male&code=8302-2'
    expect(await firstPage(`/${path}`)).toEqual(first(await byRid(expected)).sort())
    expect(await planProblems(path)).toEqual([])
    // the Patients read for the chain (alias r1): once, not once per part of the statement that probes it
    const { plans } = await searchCost(url(), path, { text: true })
    const reads = plans.flat().filter((line) => /on resource r1(_\d+)? /.test(line) && /actual time=/.test(line))
    expect(reads.length).toBe(1)
  })
})
