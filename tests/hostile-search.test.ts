// Issue 19, search shapes: a search beyond a limit of shared/limits.ts is refused with a 400 that names the
// setting, before anything runs; and a search that outlasts its statement budget answers 503 with an
// OperationOutcome (PostgreSQL's statement_timeout), never a dropped connection.
import { describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'

const s = useTestServer({ SEARCH_STATEMENT_TIMEOUT_MS: '500', MAX_SEARCH_PARAMETERS: '1000' })

async function refused(query: string, setting: string): Promise<void> {
  const res = await s.fhirFetch(`/Patient?${query}`)
  expect(res.status).toBe(400)
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  expect(body.issue[0].diagnostics).toContain(setting)
}

const repeat = (n: number, f: (i: number) => string, sep = '&') => Array.from({ length: n }, (_, i) => f(i)).join(sep)

describe('shapes beyond the limits: 400 naming the setting', () => {
  test('_sort keys', async () => {
    await refused(`_sort=${repeat(30, () => 'name', ',')}`, 'MAX_SORT_KEYS')
    expect((await s.fhirFetch('/Patient?_sort=name,birthdate,-_lastUpdated')).status).toBe(200)
  })

  test('_filter terms', async () => {
    await refused(`_filter=${encodeURIComponent(repeat(200, (i) => `name eq x${i}`, ' or '))}`, 'MAX_FILTER_TERMS')
    expect((await s.fhirFetch(`/Patient?_filter=${encodeURIComponent('name eq a or name eq b')}`)).status).toBe(200)
  })

  test('_include and _revinclude parameters', async () => {
    await refused(
      repeat(20, () => '_revinclude=Observation:subject'),
      'MAX_INCLUDES',
    )
  })

  test('chain depth (HAPI-2007)', async () => {
    const res = await s.fhirFetch('/Observation?subject:Patient.organization.partof.partof.name=x')
    expect(res.status).toBe(400)
    expect((await readJson(res)).issue[0].diagnostics).toContain('HAPI-2007')
  })
})

test('repeated parameters beyond MAX_SEARCH_PARAMETERS: 400', async () => {
  await refused(
    repeat(1001, (i) => `name=x${i}`),
    'MAX_SEARCH_PARAMETERS',
  )
})

test('a search beyond its statement budget: 503 with an OperationOutcome', async () => {
  const res = await s.fhirFetch(`/Patient?${repeat(400, (i) => `name=x${i}`)}`)
  expect(res.status).toBe(503)
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  expect(body.issue[0].diagnostics).toContain('statement_timeout')
})
