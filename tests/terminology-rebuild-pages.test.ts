// $reindex-terminology pages through the stored CodeSystems and ValueSets by rid. The pages must follow
// the numbers, not their text: with rids on both sides of a power of ten (9,999 and 10,000), text order
// would put 10000 before 9900, and the keyset `rid > last` would then read some rows twice and skip
// others. Its own file: the rid sequence is moved before anything is created.
import { beforeAll, expect, test } from 'bun:test'
import { ADMIN_KEY, readJson, useTestServer } from './harness'

const s = useTestServer()
const COUNT = 250

beforeAll(async () => {
  await s.sql`select setval('resource_rid_seq', 9800)` // the next block of 100 rids starts at 9,900
  const entry = Array.from({ length: COUNT }, (_, i) => ({
    resource: {
      resourceType: 'ValueSet',
      url: `http://example.org/fhir/ValueSet/paged-${i}`,
      status: 'active',
      compose: { include: [{ system: 'http://example.org/fhir/CodeSystem/paged', concept: [{ code: `c${i}` }] }] },
    },
    request: { method: 'POST', url: 'ValueSet' },
  }))
  const res = await s.fhirFetch('', { method: 'POST', json: { resourceType: 'Bundle', type: 'transaction', entry } })
  expect(res.status).toBe(200)
})

test('every stored ValueSet is rebuilt once, whatever the number of digits of its rid', async () => {
  const [span] = await s.sql<{ short: number; long: number }[]>`
    select count(*) filter (where rid < 10000)::int as short, count(*) filter (where rid >= 10000)::int as long
    from resource where res_type = 'ValueSet' and not deleted`
  // the precondition of the test: rids of both lengths, more than one page (200) of them
  expect(span.short).toBeGreaterThan(0)
  expect(span.long).toBeGreaterThan(0)
  expect(span.short + span.long).toBe(COUNT)

  const out = await readJson(await s.fhirFetch('/$reindex-terminology', { method: 'POST' }))
  const jobId = out.parameter.find((p: any) => p.name === 'jobId').valueString
  let job: any
  for (let i = 0; i < 400 && !['completed', 'failed', 'cancelled'].includes(job?.state); i++) {
    if (i > 0) await Bun.sleep(50)
    job = await readJson(await fetch(`${s.base}/admin/jobs/${jobId}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }))
  }
  expect(job.state).toBe('completed')
  const [stored] = await s.sql<{ n: number; distinct: number }[]>`
    select count(*)::int as n, count(distinct rid)::int as distinct from term_value_set where url like 'http://example.org/fhir/ValueSet/paged-%'`
  expect(stored).toEqual({ n: COUNT, distinct: COUNT })
})

test('history of versions written in one instant lists them by rid, as numbers, newest first', async () => {
  // the 250 ValueSets share the transaction's lastUpdated: the tie-break orders them
  const bundle = await readJson(await s.fhirFetch('/ValueSet/_history?_count=200'))
  expect(new Set(bundle.entry.map((e: any) => e.resource.meta.lastUpdated)).size).toBe(1)
  const expected = await s.sql<{ id: string }[]>`select id from resource where res_type = 'ValueSet' order by rid desc limit 200`
  expect(bundle.entry.map((e: any) => e.resource.id)).toEqual(expected.map((r) => r.id))
})
