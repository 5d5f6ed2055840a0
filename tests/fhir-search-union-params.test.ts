// A parameter whose expression is the union of other parameters' (Observation combo-code is
// `code | component-code`) stores no index rows of its own: it is searched, sorted and checked for
// :missing on its members' rows (registry.ts unionMembers). Answers are the same as if it had its own.
import { beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { getOk, keys } from './search-expect'

const s = useTestServer()
const LOINC = 'http://loinc.org'
const UCUM = 'http://unitsofmeasure.org'
const coding = (code: string) => ({ coding: [{ system: LOINC, code }] })
const qty = (value: number) => ({ value, system: UCUM, code: 'mm[Hg]', unit: 'mm[Hg]' })

const resources = [
  // a panel: values only in its components
  {
    resourceType: 'Observation',
    id: 'u-bp',
    status: 'final',
    code: coding('85354-9'),
    component: [
      { code: coding('8462-4'), valueQuantity: qty(77) },
      { code: coding('8480-6'), valueQuantity: qty(120) },
    ],
  },
  // the same codes as the observation's own code and value
  { resourceType: 'Observation', id: 'u-sys', status: 'final', code: coding('8480-6'), valueQuantity: qty(150) },
  { resourceType: 'Observation', id: 'u-dia', status: 'final', code: coding('8462-4'), valueQuantity: qty(70) },
  // neither a code nor a value that the combos would index
  { resourceType: 'Observation', id: 'u-none', status: 'final', code: { text: 'free text only' } },
  { resourceType: 'Observation', id: 'u-concept', status: 'final', code: coding('72166-2'), valueCodeableConcept: coding('LA18976-3') },
]

const matches = async (query: string) => keys(((await getOk(s, `/Observation?${query}&_count=100`)).entry ?? []).map((e: any) => e.resource))
const ids = (...xs: string[]) => xs.map((x) => `Observation/${x}`).sort()

beforeAll(async () => {
  for (const r of resources) {
    const res = await s.fhirFetch(`/Observation/${r.id}`, { method: 'PUT', json: r })
    expect(res.status).toBeLessThan(300)
  }
})

describe('union parameters (Observation combo-*)', () => {
  test('store no rows of their own', async () => {
    const [row] = await s.sql<{ n: number }[]>`
      select (select count(*) from idx_token where code like 'combo-%') + (select count(*) from idx_quantity where code like 'combo-%')
        + (select count(*) from idx_composite where code like 'combo-%')::int as n`
    expect(Number(row.n)).toBe(0)
    const [members] = await s.sql<
      { n: number }[]
    >`select count(*)::int as n from idx_composite where code in ('code-value-quantity', 'component-code-value-quantity')`
    expect(members.n).toBe(4) // u-bp's two components, u-sys, u-dia
  })

  test('token: a code of the observation or of a component', async () => {
    expect(await matches('combo-code=8480-6')).toEqual(ids('u-bp', 'u-sys'))
    expect(await matches(`combo-code=${LOINC}|8462-4,${LOINC}|72166-2`)).toEqual(ids('u-bp', 'u-dia', 'u-concept'))
    expect(await matches('combo-code:not=8480-6')).toEqual(ids('u-dia', 'u-none', 'u-concept'))
    expect(await matches('combo-value-concept=LA18976-3')).toEqual(ids('u-concept'))
  })

  test('quantity: a value of the observation or of a component', async () => {
    expect(await matches('combo-value-quantity=gt100')).toEqual(ids('u-bp', 'u-sys'))
    expect(await matches(`combo-value-quantity=lt75|${UCUM}|mm[Hg]`)).toEqual(ids('u-dia'))
  })

  test('composite: code and value of the same node', async () => {
    expect(await matches(`combo-code-value-quantity=${LOINC}|8480-6$gt130`)).toEqual(ids('u-sys'))
    expect(await matches(`combo-code-value-quantity=${LOINC}|8480-6$gt110`)).toEqual(ids('u-bp', 'u-sys'))
    // the panel's own code has no value: 85354-9 pairs with nothing
    expect(await matches(`combo-code-value-quantity=${LOINC}|85354-9$gt0`)).toEqual([])
  })

  test(':missing, _sort and _filter read the members’ rows', async () => {
    expect(await matches('combo-value-quantity:missing=true')).toEqual(ids('u-none', 'u-concept'))
    expect(await matches('combo-value-concept:missing=false')).toEqual(ids('u-concept'))
    // ascending by the smallest code of each: 72166-2, 8462-4 (u-bp, u-dia by id), 8480-6; no code last
    const sorted = ((await getOk(s, '/Observation?_sort=combo-code,_id&_count=100')).entry ?? []).map((e: any) => e.resource.id)
    expect(sorted).toEqual(['u-concept', 'u-bp', 'u-dia', 'u-sys', 'u-none'])
    expect(await matches('_filter=combo-code eq 8462-4')).toEqual(ids('u-bp', 'u-dia'))
  })

  test('conditional create matches on the members’ rows', async () => {
    const res = await s.fhirFetch('/Observation', {
      method: 'POST',
      json: { resourceType: 'Observation', status: 'final', code: coding('8480-6') },
      headers: { 'if-none-exist': 'combo-code=85354-9' },
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('location')).toContain('/Observation/u-bp/')
  })
})
