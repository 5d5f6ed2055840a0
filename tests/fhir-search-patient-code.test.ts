// A search by one patient and a code (`Observation?subject=Patient/1&code=...`): the token rows carry
// the Patient their resource references ('*' for several), and such a search reads the code's rows of
// that patient from the token lookup index (compile.ts, sql/migrations/0015_token_index_shape.sql).
import { beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { getOk, keys } from './search-expect'
import { parseSearch } from '../shared/fhir/search/query/parse'
import { searchWhere } from '../shared/fhir/search/query/execute'

const s = useTestServer()
const LOINC = 'http://loinc.org'

const obs = (id: string, code: string, refs: Record<string, string>) => ({
  resourceType: 'Observation',
  id,
  status: 'final',
  code: { coding: [{ system: LOINC, code }] },
  ...Object.fromEntries(Object.entries(refs).map(([k, v]) => [k, k === 'performer' ? [{ reference: v }] : { reference: v }])),
})

async function put(resource: any): Promise<void> {
  const res = await s.fhirFetch(`/${resource.resourceType}/${resource.id}`, { method: 'PUT', json: resource })
  expect(res.status).toBeLessThan(300)
}

const matches = async (query: string) => keys(((await getOk(s, `/Observation?${query}&_count=100`)).entry ?? []).map((e: any) => e.resource))

beforeAll(async () => {
  for (const id of ['pc-1', 'pc-2', 'pc-3']) await put({ resourceType: 'Patient', id })
  await put({ resourceType: 'Group', id: 'pc-g', type: 'person', actual: true })
  await put(obs('a', '8302-2', { subject: 'Patient/pc-1' }))
  await put(obs('b', '8302-2', { subject: 'Patient/pc-2' }))
  // references two patients: its token rows carry '*'
  await put(obs('c', '8302-2', { subject: 'Patient/pc-1', performer: 'Patient/pc-2' }))
  await put(obs('d', '29463-7', { subject: 'Patient/pc-1' }))
  // a subject that is not a Patient, with the same id as none of them
  await put(obs('e', '8302-2', { subject: 'Group/pc-g' }))
})

describe('search by a patient and a code', () => {
  test('each form of the patient reference finds the code of that patient only', async () => {
    expect(await matches(`subject=Patient/pc-1&code=${LOINC}|8302-2`)).toEqual(['Observation/a', 'Observation/c'])
    expect(await matches('subject=Patient/pc-1&code=8302-2')).toEqual(['Observation/a', 'Observation/c'])
    expect(await matches('patient=pc-1&code=8302-2')).toEqual(['Observation/a', 'Observation/c'])
    expect(await matches('subject:Patient=pc-2&code=8302-2')).toEqual(['Observation/b'])
    expect(await matches(`subject=${s.fhir}/Patient/pc-1&code=29463-7`)).toEqual(['Observation/d'])
    expect(await matches('subject=Patient/pc-3&code=8302-2')).toEqual([])
  })

  test('a resource that references several patients is found through the parameter that names each', async () => {
    expect(await matches('performer=Patient/pc-2&code=8302-2')).toEqual(['Observation/c'])
    expect(await matches('subject=Patient/pc-2&code=8302-2')).toEqual(['Observation/b'])
    expect(await matches('subject=Group/pc-g&code=8302-2')).toEqual(['Observation/e'])
  })

  test('a new version moves the rows to its new patient', async () => {
    await put(obs('a', '8302-2', { subject: 'Patient/pc-3' }))
    expect(await matches('subject=Patient/pc-3&code=8302-2')).toEqual(['Observation/a'])
    expect(await matches('subject=Patient/pc-1&code=8302-2')).toEqual(['Observation/c'])
    // one patient again: '*' becomes that patient
    await put(obs('c', '8302-2', { subject: 'Patient/pc-1' }))
    expect(await matches('subject=Patient/pc-1&code=8302-2')).toEqual(['Observation/c'])
    expect(await matches('performer=Patient/pc-2&code=8302-2')).toEqual([])
    const rows = await s.sql<{ patient: string | null }[]>`
      select distinct t.patient from idx_token t join resource r on r.rid = t.rid where r.res_type = 'Observation' and r.id = 'c'`
    expect(rows.map((r) => r.patient)).toEqual(['pc-1'])
  })

  test('the generic plan reads the patient’s rows of the code from the lookup index and checks candidates by rid', async () => {
    const q = parseSearch(['Observation'], new URLSearchParams(`subject=Patient/pc-1&code=${LOINC}|8302-2`), { defaultCount: 20, maxCount: 100 })
    const plan = await s.sql.begin(async (tx) => {
      await tx`set local plan_cache_mode = force_generic_plan`
      const rows = await tx<any[]>`explain select r0.rid from resource r0 where ${searchWhere(tx as any, q, s.fhir)}`
      return rows.map((r) => Object.values(r)[0]).join('\n')
    })
    expect(plan).toMatch(/Index Scan using idx_token_lookup on idx_token[\s\S]*Index Cond: .*patient = /)
    // a probe by rid never goes through a lookup index (they start with res_type)
    const q2 = parseSearch(['Observation'], new URLSearchParams('subject=Group/pc-g&status=final'), { defaultCount: 20, maxCount: 100 })
    const plan2 = await s.sql.begin(async (tx) => {
      await tx`set local plan_cache_mode = force_generic_plan`
      const rows = await tx<any[]>`explain select r0.rid from resource r0 where ${searchWhere(tx as any, q2, s.fhir)}`
      return rows.map((r) => Object.values(r)[0]).join('\n')
    })
    expect(plan2).toMatch(/idx_token_rid on idx_token[\s\S]*Index Cond: \(\(rid = /)
    expect(plan2).not.toMatch(/idx_token_lookup/)
  })
})
