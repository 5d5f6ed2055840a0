// Plain creates that arrive together are written by one statement (group commit, insert-batch.ts):
// every create still gets its own answer, and a create that fails alone fails without the others.
import { describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'

const s = useTestServer()

const post = (resource: object) => s.fhirFetch(`/${(resource as { resourceType: string }).resourceType}`, { method: 'POST', json: resource })

describe('concurrent plain creates', () => {
  test('share statements: the rows of 40 concurrent creates were written by fewer than 40 transactions', async () => {
    const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => post({ resourceType: 'Patient', name: [{ family: `Batch${i}` }] })))
    expect(responses.map((r) => r.status)).toEqual(Array(40).fill(201))
    const ids = (await Promise.all(responses.map(readJson))).map((b) => b.id as string)
    expect(new Set(ids).size).toBe(40)
    const [{ transactions, rows }] =
      await s.sql`select count(distinct xmin::text)::int as transactions, count(*)::int as rows from resource where res_type = 'Patient' and id = any(${ids})`
    expect(rows).toBe(40)
    expect(transactions).toBeLessThan(40)
    // each one is searchable by its own index rows
    const found = await readJson(await s.fhirFetch('/Patient?family=Batch17'))
    expect(found.entry.map((e: any) => e.resource.id)).toEqual([ids[17]])
  })

  test('a create with a missing reference fails alone (400 HAPI-1094); the others of its batch are stored', async () => {
    const patient = await readJson(await post({ resourceType: 'Patient', name: [{ family: 'Holder' }] }))
    const bodies = Array.from({ length: 30 }, (_, i) => ({
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
      subject: { reference: i === 13 ? 'Patient/does-not-exist-batch' : `Patient/${patient.id}` },
      valueQuantity: { value: 100 + i, unit: 'cm', system: 'http://unitsofmeasure.org', code: 'cm' },
    }))
    const responses = await Promise.all(bodies.map(post))
    const statuses = responses.map((r) => r.status)
    expect(statuses[13]).toBe(400)
    expect(statuses.filter((x, i) => i !== 13)).toEqual(Array(29).fill(201))
    const failure = await readJson(responses[13])
    expect(failure.issue[0].diagnostics).toContain('HAPI-1094: Resource Patient/does-not-exist-batch not found, specified in path: Observation.subject')
    const bundle = await readJson(await s.fhirFetch(`/Observation?subject=Patient/${patient.id}&_summary=count`))
    expect(bundle.total).toBe(29)
    const none = await readJson(await s.fhirFetch('/Observation?value-quantity=113&_summary=count'))
    expect(none.total).toBe(0)
  })
})
