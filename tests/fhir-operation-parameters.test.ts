// A Parameters body whose parameters are not an array of named objects is a 400 OperationOutcome in every
// operation, $export and $import included (each read `parameter` as an array: `"parameter": 5` was a 500).
import { beforeAll, describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'

const s = useTestServer({ BULK_IMPORT_ORIGINS: 'http://127.0.0.1:9' })

beforeAll(async () => {
  const res = await s.fhirFetch('/Patient/op-p1', { method: 'PUT', json: { resourceType: 'Patient', id: 'op-p1' } })
  expect(res.status).toBe(201)
})

const input = (part: unknown) => ({ name: 'input', part })
const typeAndUrl = [
  { name: 'type', valueCode: 'Patient' },
  { name: 'url', valueUri: 'http://127.0.0.1:9/p.ndjson' },
]

describe('malformed parameters', () => {
  test.each([
    ['/$export', 5],
    ['/$export', {}],
    ['/$export', 'abc'],
    ['/$export', [null]],
    ['/$export', [{ valueString: 'Patient' }]],
    ['/Patient/$export', [{ name: 'patient', part: 7 }]],
    ['/$reindex', 5],
    ['/$get-resource-counts', { name: 'x' }],
    ['/Patient/op-p1/$meta-add', 5],
    ['/Patient/$validate', 5],
    ['/CodeSystem/$lookup', 5],
    ['/Patient/op-p1/$everything', 5],
  ])('%s with parameter %j: 400', async (path, parameter) => {
    const res = await s.fhirFetch(path, { method: 'POST', json: { resourceType: 'Parameters', parameter }, headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(400)
    expect((await readJson(res)).resourceType).toBe('OperationOutcome')
  })

  test.each([
    ['an input whose part is not an array', [input('abc')]],
    ['an input whose part is a number', [input(5)]],
    ['an input with a null part', [input([null])]],
    ['a storageDetail whose part is an object', [{ name: 'storageDetail', part: {} }, input(typeAndUrl)]],
    ['a storageDetail whose part is a number', [{ name: 'storageDetail', part: 5 }, input(typeAndUrl)]],
    ['parameters that are not an array', { name: 'inputFormat' }],
  ])('$import with %s: 400', async (_what, parameter) => {
    const body = {
      resourceType: 'Parameters',
      parameter: Array.isArray(parameter) ? [{ name: 'inputFormat', valueCode: 'application/fhir+ndjson' }, ...parameter] : parameter,
    }
    const res = await s.fhirFetch('/$import', { method: 'POST', json: body, headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(400)
    expect((await readJson(res)).resourceType).toBe('OperationOutcome')
  })
})
