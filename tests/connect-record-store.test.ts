// Two pulls of one connection that store at the same time (the callback's first pull and a periodic
// re-sync) both succeed, and the records exist once.
import { expect, test } from 'bun:test'
import { storeRecords } from '../shared/connect/record-store'
import { createRepo } from '../shared/fhir/store'
import { readJson, useTestServer } from './harness'
import { call, createOrg } from './patients-client'

const s = useTestServer()

test('concurrent pulls of the same records: both succeed, each record is stored once under one id', async () => {
  const org = await createOrg(s)
  const patient = await readJson(await call(s, org, '/patients', { method: 'POST', json: { patient_id: 'race-1', name: 'Ada Race' } }))
  expect(patient.id).toBeString()
  const repo = await createRepo(s.sql, s.config)
  const ctx = { repo, config: s.config, baseUrl: s.fhir, secret: 'test' }
  const scope = { organizationId: org.id, patientId: patient.id, fhirSourceId: 'src_race', fhirBaseUrl: 'https://ehr.example.org/fhir', sourcePatientId: 'p1' }
  const records = [
    { resourceType: 'Patient', id: 'p1', name: [{ family: 'Race' }] },
    ...Array.from({ length: 300 }, (_, i) => ({
      resourceType: 'Observation',
      id: `o${i}`,
      status: 'final',
      code: { text: 'x' },
      subject: { reference: 'Patient/p1' },
    })),
  ]
  const results = await Promise.all([0, 1, 2, 3, 4, 5].map(() => storeRecords(ctx, s.sql, scope, structuredClone(records))))
  for (const r of results) expect(r.total).toBe(301)
  const [{ n, distinct }] = await s.sql`
    select count(*)::int as n, count(distinct our_id)::int as distinct from connect_resource_map where organization_id = ${org.id} and patient_id = ${patient.id}`
  expect({ n, distinct }).toEqual({ n: 301, distinct: 301 })
  const [{ stored }] = await s.sql`
    select count(*)::int as stored from resource r join connect_resource_map m on m.res_type = r.res_type and m.our_id = r.id
    where m.organization_id = ${org.id} and m.patient_id = ${patient.id} and not r.deleted`
  expect(stored).toBe(301)
})
