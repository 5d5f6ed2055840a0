// Validation of writes and $validate: bad input gets 400 with an OperationOutcome naming the element,
// and nothing is written. https://hl7.org/fhir/R4/validation.html
// https://hl7.org/fhir/R4/resource-operation-validate.html
import { beforeAll, describe, expect, test } from 'bun:test'
import { type TestServer, readJson, useTestServer } from './harness'

const s = useTestServer()

async function rowCounts(): Promise<{ current: number; history: number }> {
  const [row] = await s.sql<{ current: number; history: number }[]>`
    select (select count(*)::int from resource) as current, (select count(*)::int from resource_history) as history`
  return row
}

async function outcome(res: Response): Promise<any> {
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  expect(body.issue.length).toBeGreaterThan(0)
  return body
}

const expressions = (oo: any): string[] => oo.issue.flatMap((i: any) => i.expression ?? [])
const errors = (oo: any) => oo.issue.filter((i: any) => i.severity === 'error' || i.severity === 'fatal')

/** Sends a write that must fail with 400, and checks that no row was written. */
async function rejected(path: string, init: Parameters<TestServer['fhirFetch']>[1]): Promise<any> {
  const before = await rowCounts()
  const res = await s.fhirFetch(path, init)
  expect(res.status).toBe(400)
  const oo = await outcome(res)
  expect(errors(oo).length).toBeGreaterThan(0)
  expect(await rowCounts()).toEqual(before)
  return oo
}

describe('invalid writes: 400, nothing written', () => {
  let existing: any

  beforeAll(async () => {
    const res = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true } })
    expect(res.status).toBe(201)
    existing = await readJson(res)
  })

  test('resourceType does not match the URL', async () => {
    await rejected('/Patient', { method: 'POST', json: { resourceType: 'Observation', status: 'final', code: { text: 'x' } } })
    await rejected(`/Patient/${existing.id}`, { method: 'PUT', json: { resourceType: 'Observation', id: existing.id, status: 'final', code: { text: 'x' } } })
  })

  test('an unknown element: the issue expression names its path', async () => {
    const oo = await rejected('/Patient', { method: 'POST', json: { resourceType: 'Patient', foo: 'bar' } })
    expect(expressions(oo)).toContain('Patient.foo')
  })

  test('an unknown nested element names the nested path', async () => {
    const oo = await rejected('/Patient', { method: 'POST', json: { resourceType: 'Patient', name: [{ family: 'X', nickname: 'Y' }] } })
    expect(expressions(oo).some((e) => e.startsWith('Patient.name') && e.endsWith('nickname'))).toBe(true)
  })

  test('a malformed date', async () => {
    const oo = await rejected('/Patient', { method: 'POST', json: { resourceType: 'Patient', birthDate: '2020-13-45' } })
    expect(expressions(oo)).toContain('Patient.birthDate')
  })

  test('a wrong JSON type for a primitive', async () => {
    const oo = await rejected('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: 'yes' } })
    expect(expressions(oo)).toContain('Patient.active')
  })

  test('a missing required element (Observation without status)', async () => {
    const oo = await rejected('/Observation', { method: 'POST', json: { resourceType: 'Observation', code: { text: 'x' } } })
    expect(expressions(oo).some((e) => e.startsWith('Observation.status'))).toBe(true)
  })

  test('a code outside the required value set (Patient.gender)', async () => {
    const oo = await rejected('/Patient', { method: 'POST', json: { resourceType: 'Patient', gender: 'banana' } })
    expect(expressions(oo)).toContain('Patient.gender')
  })

  test('an invalid update leaves the current version alone', async () => {
    await rejected(`/Patient/${existing.id}`, { method: 'PUT', json: { resourceType: 'Patient', id: existing.id, gender: 'banana' } })
    const res = await s.fhirFetch(`/Patient/${existing.id}`)
    expect(res.headers.get('etag')).toBe('W/"1"')
  })

  test('malformed JSON', async () => {
    await rejected('/Patient', {
      method: 'POST',
      body: '{"resourceType": "Patient", "active": tru',
      headers: { 'content-type': 'application/fhir+json' },
    })
  })

  test('an empty body on POST', async () => {
    await rejected('/Patient', { method: 'POST', body: '', headers: { 'content-type': 'application/fhir+json' } })
  })

  test('a JSON array instead of a resource', async () => {
    await rejected('/Patient', { method: 'POST', json: [{ resourceType: 'Patient' }] })
  })
})

describe('$validate', () => {
  test('POST /{type}/$validate with a valid resource: 200 OperationOutcome, nothing stored', async () => {
    const before = await rowCounts()
    const res = await s.fhirFetch('/Patient/$validate', { method: 'POST', json: { resourceType: 'Patient', gender: 'female' } })
    expect(res.status).toBe(200)
    const oo = await outcome(res)
    expect(errors(oo)).toHaveLength(0)
    expect(await rowCounts()).toEqual(before)
  })

  // HAPI 6.6+ answers 200 whatever the outcome (changelog 6_6_0/upgrade.md; BaseHapiFhirResourceDao.validate).
  test('an invalid resource: 200 with the issues, nothing stored', async () => {
    const before = await rowCounts()
    const res = await s.fhirFetch('/Patient/$validate', {
      method: 'POST',
      json: { resourceType: 'Patient', gender: 'banana', birthDate: 'not-a-date' },
    })
    expect(res.status).toBe(200)
    const oo = await outcome(res)
    expect(expressions(oo)).toContain('Patient.gender')
    expect(expressions(oo)).toContain('Patient.birthDate')
    expect(await rowCounts()).toEqual(before)
  })

  test('the resource inside a Parameters `resource` parameter', async () => {
    const valid = await s.fhirFetch('/Patient/$validate', {
      method: 'POST',
      json: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: { resourceType: 'Patient', active: true } }] },
    })
    expect(valid.status).toBe(200)
    expect(errors(await outcome(valid))).toHaveLength(0)
    const invalid = await s.fhirFetch('/Patient/$validate', {
      method: 'POST',
      json: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: { resourceType: 'Patient', gender: 'banana' } }] },
    })
    expect(invalid.status).toBe(200)
    expect(expressions(await outcome(invalid))).toContain('Patient.gender')
  })

  test('instance level POST /{type}/{id}/$validate, nothing stored', async () => {
    const created = await readJson(await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true } }))
    const before = await rowCounts()
    const ok = await s.fhirFetch(`/Patient/${created.id}/$validate`, {
      method: 'POST',
      json: { resourceType: 'Patient', id: created.id, active: false },
    })
    expect(ok.status).toBe(200)
    expect(errors(await outcome(ok))).toHaveLength(0)
    const bad = await s.fhirFetch(`/Patient/${created.id}/$validate`, {
      method: 'POST',
      json: { resourceType: 'Patient', id: created.id, gender: 'banana' },
    })
    expect(bad.status).toBe(200)
    expect(errors(await outcome(bad)).length).toBeGreaterThan(0)
    expect(await rowCounts()).toEqual(before)
    const read = await s.fhirFetch(`/Patient/${created.id}`)
    expect(read.headers.get('etag')).toBe('W/"1"')
    expect((await readJson(read)).active).toBe(true)
  })

  test('a resource of another type than the URL: an error issue', async () => {
    const res = await s.fhirFetch('/Patient/$validate', { method: 'POST', json: { resourceType: 'Observation', status: 'final', code: { text: 'x' } } })
    expect(res.status).toBe(200)
    expect(errors(await outcome(res)).length).toBeGreaterThan(0)
  })

  // HAPI's own smoke test (POST Patient/{id}/$validate, no body): BaseHapiFhirResourceDao.validate reads the
  // stored resource when none is supplied.
  test('instance level with no body validates the stored version: 200', async () => {
    const created = await readJson(await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true } }))
    for (const method of ['POST', 'GET']) {
      const res = await s.fhirFetch(`/Patient/${created.id}/$validate`, { method })
      expect(res.status).toBe(200)
      const oo = await outcome(res)
      expect(errors(oo)).toHaveLength(0)
    }
  })

  test('instance level with no body, of an unknown or deleted resource: 404, 410', async () => {
    expect((await s.fhirFetch('/Patient/no-such-patient-here/$validate', { method: 'POST' })).status).toBe(404)
    const created = await readJson(await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient' } }))
    expect((await s.fhirFetch(`/Patient/${created.id}`, { method: 'DELETE' })).status).toBe(200)
    expect((await s.fhirFetch(`/Patient/${created.id}/$validate`, { method: 'POST' })).status).toBe(410)
  })

  test('type level with no resource: 400 HAPI-0992', async () => {
    const res = await s.fhirFetch('/Patient/$validate', {
      method: 'POST',
      json: { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'create' }] },
    })
    expect(res.status).toBe(400)
    expect((await outcome(res)).issue[0].diagnostics).toStartWith('HAPI-0992: ')
  })
})
