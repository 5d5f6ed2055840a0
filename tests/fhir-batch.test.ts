// Batch Bundles over HTTP (entries independent, per-entry outcomes, referential integrity per entry) and
// the MAX_BUNDLE_ENTRIES limit of both Bundle types. https://hl7.org/fhir/R4/http.html#transaction
import { describe, expect, test } from 'bun:test'
import {
  bundle,
  commit,
  create,
  get,
  observation,
  patient,
  post,
  postBundle,
  put,
  rejected,
  SYS,
  target,
  transaction,
  unique,
  uuid,
  withIdentifier,
} from './bundle-http'
import { readJson, useTestServer } from './harness'

describe('batch', () => {
  const s = useTestServer()

  test('entries run independently: a failing entry does not stop the others; batch-response with per-entry outcomes', async () => {
    const a = unique('batch-a')
    const b = unique('batch-b')
    const dup = unique('batch-dup')
    await create(s, patient(dup))
    await create(s, patient(dup))
    const res = await postBundle(
      s,
      bundle('batch', [
        post(patient(a), uuid()),
        put('Patient/batch-bad', { resourceType: 'Patient', id: 'batch-bad', birthDate: 'not-a-date' }),
        get('Patient/no-such-batch-patient'),
        put(`Patient?identifier=${SYS}|${dup}`, patient(dup, { gender: 'other' })),
        post(patient(b), uuid()),
      ]),
    )
    expect(res.status).toBe(200)
    const body = await readJson(res)
    expect(body.type).toBe('batch-response')
    expect(body.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '400 Bad Request', '404 Not Found', '412 Precondition Failed', '201 Created'])
    for (const i of [1, 2, 3]) expect(body.entry[i].response.outcome.resourceType).toBe('OperationOutcome')
    expect(await withIdentifier(s, 'Patient', a)).toHaveLength(1)
    expect(await withIdentifier(s, 'Patient', b)).toHaveLength(1)
    expect(target(body.entry[0].response.location)).toBe(`Patient/${(await withIdentifier(s, 'Patient', a))[0]}`)
  })

  test('an entry referencing a missing resource: 400 HAPI-1094 for that entry (referential integrity on write), the others written', async () => {
    const v = unique('batch-ri')
    const res = await postBundle(s, bundle('batch', [post(observation('Patient/no-such-patient-x3')), post(patient(v), uuid())]))
    expect(res.status).toBe(200)
    const body = await readJson(res)
    expect(body.entry[1].response.status).toBe('201 Created')
    expect(body.entry[0].response.status).toBe('400 Bad Request')
    expect(JSON.stringify(body.entry[0].response.outcome)).toContain('HAPI-1094')
  })
})

describe('MAX_BUNDLE_ENTRIES', () => {
  const s = useTestServer({ MAX_BUNDLE_ENTRIES: '5' })

  test('a bundle over the limit: 413, nothing written; at the limit it is accepted', async () => {
    const over = Array.from({ length: 6 }, (_, i) => post(patient(unique(`max-${i}`)), uuid()))
    await rejected(s, transaction(over), 413)
    await rejected(s, bundle('batch', over), 413)
    const body = await commit(s, over.slice(0, 5))
    expect(body.entry.map((e: any) => e.response.status)).toEqual(Array(5).fill('201 Created'))
  })
})
