// `_total=accurate` of a token value most resources of the type have (complement-count.ts): the type's
// live resources less the few without it (another value, no value, a deleted resource), rather than
// every row of the value read and counted. Checked: the totals against the index rows counted in SQL,
// as writes change them, and that no scan reads the value's rows beyond the drive budget. Statistics removed, as after a bulk load. Not timed.
import { beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { post, transaction } from './bundle-http'
import { widestScan } from './plans'
import { getOk } from './search-expect'
import { DRIVE_BUDGET } from '../shared/fhir/search/query/bounded'

const s = useTestServer()
const SYS = 'http://example.org/complement-count'
// 1,010 women, 4 men, 4 Patients without a gender
const FEMALE = 1010
function patient(i: number) {
  const gender = i < FEMALE ? 'female' : i < FEMALE + 4 ? 'male' : undefined
  return { resourceType: 'Patient', identifier: [{ system: SYS, value: String(i) }], ...(gender ? { gender } : {}) }
}

const url = () => s.config.databaseUrl as string
const idOf = async (i: number) => (await getOk(s, `/Patient?identifier=${encodeURIComponent(`${SYS}|${i}`)}`)).entry[0].resource.id as string

beforeAll(async () => {
  const all = Array.from({ length: FEMALE + 8 }, (_, i) => patient(i))
  for (let from = 0; from < all.length; from += 400) {
    const res = await s.fhirFetch('', { method: 'POST', json: transaction(all.slice(from, from + 400).map((p) => post(p))) })
    expect(res.status).toBe(200)
  }
  // As a bulk load leaves the tables: no column statistics, no row-count estimates.
  await s.sql`delete from pg_statistic where starelid in (select oid from pg_class where relnamespace = 'public'::regnamespace)`
  await s.sql`update pg_class set reltuples = -1, relpages = 0 where relnamespace = 'public'::regnamespace and relkind = 'r'`
}, 300_000)

// The resources with a token row of the value, counted in SQL (index rows are those of live resources).
async function counted(code: string, value: string): Promise<number> {
  const [{ n }] = await s.sql<{ n: number }[]>`
    select count(distinct rid)::int as n from idx_token where res_type = 'Patient' and code = ${code} and value = ${value}`
  return n
}

describe('_total=accurate of a value most resources have', () => {
  const total = async (query: string) => (await getOk(s, `/Patient?${query}&_total=accurate&_count=1`)).total

  test(`Patient?gender=female (${FEMALE} of ${FEMALE + 8}): counted from the 8 without it`, async () => {
    expect(await total('gender=female')).toBe(FEMALE)
    // the value's rows read up to the drive budget (whether it is common), never all of them
    expect(await widestScan(url(), 'Patient?gender=female&_total=accurate', /^idx_token_lookup$/)).toBeLessThanOrEqual(DRIVE_BUDGET)
  })

  test('as writes change it: a woman deleted, a man made a woman', async () => {
    const woman = await idOf(3)
    expect((await s.fhirFetch(`/Patient/${woman}`, { method: 'DELETE' })).status).toBe(200)
    const man = await idOf(FEMALE)
    expect(
      (await s.fhirFetch(`/Patient/${man}`, { method: 'PUT', json: { ...patient(0), id: man, identifier: [{ system: SYS, value: String(FEMALE) }] } })).status,
    ).toBe(200)
    expect(await counted('gender', 'female')).toBe(FEMALE)
    expect(await total('gender=female')).toBe(FEMALE)
    expect(await total('gender=male')).toBe(3)
  })
})
