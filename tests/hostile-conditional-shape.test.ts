// Issue 19, search shapes in match URLs: a conditional create (If-None-Exist), update, delete or patch, a
// transaction entry's match URL and an inline match reference are searches too, held to the same limits
// of shared/limits.ts (MAX_SEARCH_PARAMETERS, MAX_FILTER_TERMS...) with a 400 naming the setting, before
// anything runs. Before, a match URL repeating a parameter hundreds of times went to the database.
import { describe, expect, test } from 'bun:test'
import { post, put, transaction } from './bundle-http'
import { readJson, useTestServer } from './harness'

const s = useTestServer({ MAX_SEARCH_PARAMETERS: '3', MAX_FILTER_TERMS: '2' })

const repeat = (n: number) => Array.from({ length: n }, (_, i) => `name=x${i}`).join('&')
const TOO_MANY = repeat(4)
const patient = { resourceType: 'Patient', name: [{ family: 'Shape' }] }

async function refused(res: Response, setting: string): Promise<void> {
  const body = await readJson(res)
  expect(res.status).toBe(400)
  expect(JSON.stringify(body)).toContain(setting)
}

describe('match URLs beyond the search limits: 400 naming the setting', () => {
  test('conditional create (If-None-Exist)', async () => {
    await refused(await s.fhirFetch('/Patient', { method: 'POST', json: patient, headers: { 'if-none-exist': TOO_MANY } }), 'MAX_SEARCH_PARAMETERS')
    const within = { resourceType: 'Patient', name: [{ family: 'Within' }] }
    const created = await s.fhirFetch('/Patient', { method: 'POST', json: within, headers: { 'if-none-exist': 'name=Within&name=Within&_id:missing=false' } })
    expect(created.status).toBe(201)
  })

  test('conditional update, delete and patch', async () => {
    await refused(await s.fhirFetch(`/Patient?${TOO_MANY}`, { method: 'PUT', json: patient }), 'MAX_SEARCH_PARAMETERS')
    await refused(await s.fhirFetch(`/Patient?${TOO_MANY}`, { method: 'DELETE' }), 'MAX_SEARCH_PARAMETERS')
    const patch = [{ op: 'replace', path: '/active', value: true }]
    await refused(
      await s.fhirFetch(`/Patient?${TOO_MANY}`, { method: 'PATCH', body: JSON.stringify(patch), headers: { 'content-type': 'application/json-patch+json' } }),
      'MAX_SEARCH_PARAMETERS',
    )
    const filter = encodeURIComponent('name eq a or name eq b or name eq c')
    await refused(await s.fhirFetch(`/Patient?_filter=${filter}`, { method: 'DELETE' }), 'MAX_FILTER_TERMS')
  })

  test('transaction entries: If-None-Exist and conditional PUT URLs', async () => {
    const ifNoneExist = await s.fhirFetch('', { method: 'POST', json: transaction([post(patient, undefined, { ifNoneExist: TOO_MANY })]) })
    await refused(ifNoneExist, 'MAX_SEARCH_PARAMETERS')
    const conditionalPut = await s.fhirFetch('', { method: 'POST', json: transaction([put(`Patient?${TOO_MANY}`, patient)]) })
    await refused(conditionalPut, 'MAX_SEARCH_PARAMETERS')
  })

  test('an inline match reference', async () => {
    const observation = {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'shape' },
      subject: { reference: `Patient?${TOO_MANY}` },
    }
    await refused(await s.fhirFetch('/Observation', { method: 'POST', json: observation }), 'MAX_SEARCH_PARAMETERS')
  })
})
