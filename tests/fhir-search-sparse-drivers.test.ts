// Two common criteria with a sparse answer (bounded.ts, driver-sample.ts): each matches more index rows
// than the drive budget, their common matches are too few for a scan in rid order to fill a page
// soon, so the page is read from one driver's rids, each resource probed for the other criterion:
// the driver whose first rows match the other most often. Their rids intersected read every row of
// both (Observation?date=gt2012&code=72514-3 on Synthea x10: 43,910 date rows for 4,120 code rows).
// Checked: the answers (first page and the next), and that no scan of the other criterion's index
// reads more than the budget's rows. Statistics removed, as after a bulk load. Not timed. And the
// count of a common value: each rid once, no set operation against the deleted resources.
import { beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { post, transaction } from './bundle-http'
import { searchCost, widestScan } from './plans'
import { getOk, linkPath } from './search-expect'
import { DRIVE_BUDGET } from '../shared/fhir/search/query/bounded'

const s = useTestServer()
const N = 2400
const SYS = 'http://example.org/sparse-drivers'

// In creation (rid) order i: odd i have the code `x` (1,200), even i the code `y`; the even i and every
// 20th i (i % 20 = 1, 120 of the odd) are dated 2021, the rest 2010. `code=x&date=ge2020`: 120 matches,
// a tenth of the code's rows, a twentieth of the first resources in rid order.
const code = (i: number) => (i % 2 === 1 ? 'x' : 'y')
const dated = (i: number) => i % 2 === 0 || i % 20 === 1
function observation(i: number) {
  return {
    resourceType: 'Observation',
    status: 'final',
    identifier: [{ system: SYS, value: String(i) }],
    code: { coding: [{ system: SYS, code: code(i) }] },
    effectiveDateTime: dated(i) ? '2021-03-01' : '2010-03-01',
  }
}

const iOf = (o: any) => Number(o.identifier[0].value)
const url = () => s.config.databaseUrl as string

beforeAll(async () => {
  for (let from = 0; from < N; from += 400) {
    const res = await s.fhirFetch('', { method: 'POST', json: transaction(Array.from({ length: 400 }, (_, k) => post(observation(from + k)))) })
    expect(res.status).toBe(200)
  }
  // As a bulk load leaves the tables: no column statistics, no row-count estimates.
  await s.sql`delete from pg_statistic where starelid in (select oid from pg_class where relnamespace = 'public'::regnamespace)`
  await s.sql`update pg_class set reltuples = -1, relpages = 0 where relnamespace = 'public'::regnamespace and relkind = 'r'`
}, 300_000)

describe('two common criteria, a sparse answer: driven from one, the other probed', () => {
  test(`Observation?code=x&date=ge2020 (each over ${DRIVE_BUDGET} rows, 120 matches)`, async () => {
    const expected = Array.from({ length: N }, (_, i) => i).filter((i) => code(i) === 'x' && dated(i))
    expect(expected.length).toBe(120)
    const path = `Observation?code=${encodeURIComponent(`${SYS}|x`)}&date=ge2020`
    const first = await getOk(s, `/${path}&_count=20`)
    expect(first.entry.map((e: any) => iOf(e.resource))).toEqual(expected.slice(0, 20))
    const next = await getOk(s, linkPath(first, 'next') as string)
    expect(next.entry.map((e: any) => iOf(e.resource))).toEqual(expected.slice(20, 40))
    // the date rows are read only up to the budget (their count), never all 1,320 for an intersection
    expect(await widestScan(url(), path, /^idx_date_(sort|lookup)$/)).toBeLessThanOrEqual(DRIVE_BUDGET)
    // the code's rows read in rid order up to the page (rid-ordered.ts), never all 1,200 to sort them
    expect(await widestScan(url(), path, /^idx_token_(lookup|rid_order)$/)).toBeLessThanOrEqual(DRIVE_BUDGET)
  })

  test("the window, the drivers' samples and the page's candidates probe the criteria on the rid before looking resources up", async () => {
    const path = `Observation?code=${encodeURIComponent(`${SYS}|x`)}&date=ge2020`
    const { plans } = await searchCost(url(), path, { text: true })
    // the resources looked up by rid, over all loops: the page's 21 matches, not all its 201 candidates (a
    // tenth of them match), the window's 210 and the samples' 200
    let lookups = 0
    for (const line of plans.flat()) {
      const m = /Index (?:Only )?Scan using \S+ on resource r0\S* .*actual time=\S+ rows=\d+ loops=(\d+)/.exec(line)
      if (m) lookups += Number(m[1])
    }
    expect(lookups).toBeLessThanOrEqual(21)
  })

  test('Observation?code=y&date=lt2015 (no common match: the rids intersected, the answer empty)', async () => {
    const b = await getOk(s, `/Observation?code=${encodeURIComponent(`${SYS}|y`)}&date=lt2015&_count=20`)
    expect(b.entry ?? []).toEqual([])
  })

  test('Observation?code=x&date=lt2015 (dense: read in rid order up to the page)', async () => {
    const expected = Array.from({ length: N }, (_, i) => i).filter((i) => code(i) === 'x' && !dated(i))
    const b = await getOk(s, `/Observation?code=${encodeURIComponent(`${SYS}|x`)}&date=lt2015&_count=20`)
    expect(b.entry.map((e: any) => iOf(e.resource))).toEqual(expected.slice(0, 20))
  })
})

describe('a common criterion sorted by a date', () => {
  test('Observation?code=x&_sort=-date (the date rows walked in order, the code checked on each before its resource is read)', async () => {
    // dated 2021 first (rid order among equal dates), then 2010
    const xs = Array.from({ length: N }, (_, i) => i).filter((i) => code(i) === 'x')
    const expected = [...xs.filter(dated), ...xs.filter((i) => !dated(i))]
    const path = `Observation?code=${encodeURIComponent(`${SYS}|x`)}&_sort=-date`
    expect((await getOk(s, `/${path}&_count=20`)).entry.map((e: any) => iOf(e.resource))).toEqual(expected.slice(0, 20))
    // the resources looked up: about a page's, not every one the walk passed (1 in 11 of the 2021 rows is an x)
    const { plans } = await searchCost(url(), path, { text: true })
    const loops = plans
      .flat()
      .map((line) => /Index Scan using (?:resource_pkey|resource_type_rid) on resource r0\S* .*actual time=\S+ rows=\d+ loops=(\d+)/.exec(line))
      .filter((m) => m !== null)
      .map((m) => Number(m[1]))
    expect(loops.length).toBeGreaterThan(0)
    expect(Math.max(...loops)).toBeLessThanOrEqual(30)
  })
})

describe('_total=accurate on a common value', () => {
  test('Observation?status=final&_total=accurate (a common value counted once per rid, a deleted resource not at all)', async () => {
    const total = async () => (await getOk(s, '/Observation?status=final&_total=accurate&_count=1')).total
    expect(await total()).toBe(N)
    const one = (await getOk(s, `/Observation?identifier=${encodeURIComponent(`${SYS}|2`)}`)).entry[0].resource
    expect((await s.fhirFetch(`/Observation/${one.id}`, { method: 'DELETE' })).status).toBe(200)
    expect(await total()).toBe(N - 1)
    // the rids counted as they are, without a set operation against the deleted ones (it cost more than the scan)
    const { plans } = await searchCost(url(), 'Observation?status=final&_total=accurate', { text: true })
    expect(plans.flat().filter((line) => /SetOp/.test(line))).toEqual([])
  })
})

describe('after ANALYZE', () => {
  test('the window of a sparse answer reads the first resources in rid order, one index descent each', async () => {
    await s.sql`analyze`
    const path = `Observation?code=${encodeURIComponent(`${SYS}|x`)}&date=ge2020`
    const expected = Array.from({ length: N }, (_, i) => i).filter((i) => code(i) === 'x' && dated(i) && i !== 2)
    expect((await getOk(s, `/${path}&_count=20`)).entry.map((e: any) => iOf(e.resource))).toEqual(expected.slice(0, 20))
    // each of the window's rids one descent (a loop of its own), never one scan of the type's resources
    // in rid order: as `order by rid limit 210`, a generic plan with Synthea x10's statistics read every
    // Observation (a parallel bitmap scan, then a sort)
    expect(await widestScan(url(), path, /^(resource_pkey|resource_type_rid)$/)).toBeLessThanOrEqual(21)
  })
})
