// $reindex as an admin job (status, progress, dedupe, cancel), instance $reindex, and HAPI's legacy
// $mark-all-resources-for-reindexing / $perform-reindexing-pass. A custom SearchParameter created after
// the data finds nothing until a reindex, and everything after it, with no new versions.
import { describe, expect, test } from 'bun:test'
import { Queue } from 'bullmq'
import { createApiKey } from '../shared/auth/api-keys'
import { ADMIN_KEY, readJson, useTestServer } from './harness'

const s = useTestServer()

const MAIDEN = 'http://hl7.org/fhir/StructureDefinition/patient-mothersMaidenName'

function patient(i: number, maiden: string): any {
  return { resourceType: 'Patient', name: [{ family: `Reindex${i}` }], extension: [{ url: MAIDEN, valueString: maiden }] }
}

async function post(path: string, body?: unknown, key = ADMIN_KEY): Promise<Response> {
  return s.fhirFetch(path, { method: 'POST', key, json: body ?? { resourceType: 'Parameters' } })
}

async function adminGet(path: string, key = ADMIN_KEY): Promise<Response> {
  return fetch(`${s.base}${path}`, { headers: { authorization: `Bearer ${key}` } })
}

async function waitForJob(id: string): Promise<any> {
  for (let i = 0; i < 400; i++) {
    const job = await readJson(await adminGet(`/admin/jobs/${id}`))
    if (['completed', 'failed', 'cancelled'].includes(job.state)) return job
    await Bun.sleep(50)
  }
  throw new Error(`job ${id} did not finish`)
}

async function searchTotal(query: string): Promise<number> {
  const res = await s.fhirFetch(`/Patient?${query}&_total=accurate&_summary=count`)
  expect(res.status).toBe(200)
  return (await readJson(res)).total
}

async function addSearchParameter(code: string): Promise<void> {
  const res = await s.fhirFetch('/SearchParameter', {
    method: 'POST',
    json: {
      resourceType: 'SearchParameter',
      url: `http://example.org/SearchParameter/${code}`,
      name: code,
      status: 'active',
      code,
      base: ['Patient'],
      type: 'string',
      expression: `Patient.extension('${MAIDEN}').value`,
      description: 'Mother maiden name',
    },
  })
  expect(res.status).toBe(201)
}

describe('$reindex (system level, as a job)', () => {
  test('a custom SearchParameter finds existing data only after $reindex, with no new versions', async () => {
    const bundle = {
      resourceType: 'Bundle',
      type: 'batch',
      entry: Array.from({ length: 1200 }, (_, i) => ({
        resource: patient(i, i % 3 === 0 ? 'Smithers' : 'Jones'),
        request: { method: 'POST', url: 'Patient' },
      })),
    }
    expect((await s.fhirFetch('', { method: 'POST', json: bundle })).status).toBe(200)
    await addSearchParameter('maiden')
    expect(await searchTotal('maiden=Smithers')).toBe(0)

    const res = await post('/$reindex', { resourceType: 'Parameters', parameter: [{ name: 'url', valueString: 'Patient?' }] })
    expect(res.status).toBe(200)
    const out = await readJson(res)
    expect(out.resourceType).toBe('Parameters')
    const jobId = out.parameter.find((p: any) => p.name === 'jobId').valueString
    expect(jobId).toMatch(/^[0-9a-f-]{36}$/)

    const job = await waitForJob(jobId)
    expect(job).toMatchObject({ kind: 'reindex', state: 'completed', processed: 1200, total: 1200, percent: 100, result: { reindexed: 1200 } })
    expect(await searchTotal('maiden=Smithers')).toBe(400)
    expect(await searchTotal('maiden=jon')).toBe(800) // string semantics: starts-with, case-insensitive
    const [{ versions }] = await s.sql`select count(*)::int as versions from resource_history where res_type = 'Patient'`
    expect(versions).toBe(0)
  })

  test('a reindex of everything (no url) counts every current resource', async () => {
    const [{ n }] = await s.sql`select count(*)::int as n from resource where not deleted`
    const out = await readJson(await post('/$reindex'))
    const job = await waitForJob(out.parameter[0].valueString)
    expect(job.state).toBe('completed')
    expect(job.processed).toBe(n)
    expect(job.total).toBe(n)
  })

  test('the same reindex asked twice at once is one job', async () => {
    const body = { resourceType: 'Parameters', parameter: [{ name: 'url', valueString: 'Patient?name=Reindex1' }] }
    const [a, b] = await Promise.all([post('/$reindex', body), post('/$reindex', body)])
    const [ja, jb] = [(await readJson(a)).parameter[0].valueString, (await readJson(b)).parameter[0].valueString]
    expect(ja).toBe(jb)
    await waitForJob(ja)
  })

  test('bad input is 400 before anything is queued', async () => {
    const before = (await s.sql`select count(*)::int as n from admin_job`)[0].n
    for (const parameter of [
      [{ name: 'url', valueString: 'Nonsense?' }],
      [{ name: 'url', valueString: 'Patient?nonsense=1' }],
      [{ name: 'reindexSearchParameters', valueCode: 'SOME' }],
      [{ name: 'optimizeStorage', valueCode: 'EVERYTHING' }],
      [{ name: 'optimisticLock', valueString: 'maybe' }],
    ]) {
      const res = await post('/$reindex', { resourceType: 'Parameters', parameter })
      expect(res.status).toBe(400)
      expect((await readJson(res)).resourceType).toBe('OperationOutcome')
    }
    expect((await s.sql`select count(*)::int as n from admin_job`)[0].n).toBe(before)
  })

  test('reindexSearchParameters=NONE completes with nothing reindexed', async () => {
    const out = await readJson(await post('/$reindex', { resourceType: 'Parameters', parameter: [{ name: 'reindexSearchParameters', valueCode: 'NONE' }] }))
    const job = await waitForJob(out.parameter[0].valueString)
    expect(job).toMatchObject({ state: 'completed', processed: 0, result: { reindexed: 0 } })
  })

  test('admin operations need the admin scope', async () => {
    const { key } = await createApiKey(s.sql, 'writer', ['read', 'write'])
    for (const op of ['/$reindex', '/$mark-all-resources-for-reindexing', '/$perform-reindexing-pass'])
      expect((await post(op, undefined, key)).status).toBe(403)
    expect((await s.fhirFetch('/$reindex', { method: 'POST', key: null })).status).toBe(401)
    expect((await adminGet('/admin/jobs', key)).status).toBe(403)
  })

  test('GET is not allowed for $reindex', async () => {
    expect((await s.fhirFetch('/$reindex')).status).toBe(405)
  })
})

describe('admin jobs API', () => {
  test('lists jobs newest first, reads one, 404 for an unknown id', async () => {
    const list = await readJson(await adminGet('/admin/jobs?kind=reindex&limit=2'))
    expect(list.data.length).toBe(2)
    expect(Date.parse(list.data[0].createdAt)).toBeGreaterThanOrEqual(Date.parse(list.data[1].createdAt))
    const missing = await adminGet(`/admin/jobs/${crypto.randomUUID()}`)
    expect(missing.status).toBe(404)
    const envelope = (await readJson(missing)).error
    expect(envelope).toMatchObject({ type: expect.any(String), code: expect.any(String), message: expect.stringContaining('not found') })
    expect(envelope.request_id).toBe(missing.headers.get('x-request-id'))
    expect((await adminGet('/admin/jobs/not-a-uuid')).status).toBe(404)
    expect((await adminGet('/admin/jobs?state=sleeping')).status).toBe(400)
  })

  test('a queued job is cancelled at once and never runs; a finished one cannot be cancelled', async () => {
    const queue = new Queue('admin', { connection: { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' }, prefix: s.config.queuePrefix })
    await queue.pause()
    try {
      const out = await readJson(await post('/$reindex', { resourceType: 'Parameters', parameter: [{ name: 'url', valueString: 'Patient?name=Reindex2' }] }))
      const id = out.parameter[0].valueString
      expect((await readJson(await adminGet(`/admin/jobs/${id}`))).state).toBe('queued')
      const res = await fetch(`${s.base}/admin/jobs/${id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}` } })
      expect(res.status).toBe(200)
      expect((await readJson(res)).state).toBe('cancelled')
      await queue.resume()
      await Bun.sleep(500)
      const job = await readJson(await adminGet(`/admin/jobs/${id}`))
      expect(job).toMatchObject({ state: 'cancelled', processed: 0, startedAt: null })
      const again = await fetch(`${s.base}/admin/jobs/${id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}` } })
      expect(again.status).toBe(409)
    } finally {
      await queue.resume()
      await queue.close()
    }
  })
})

describe('instance $reindex', () => {
  test('reindexes one resource at once and reports its index rows', async () => {
    const created = await readJson(await s.fhirFetch('/Patient', { method: 'POST', json: patient(9999, 'Oddname') }))
    await s.sql`delete from idx_string where rid = (select rid from resource where res_type = 'Patient' and id = ${created.id})`
    expect(await searchTotal('maiden=Oddname')).toBe(0)
    const res = await post(`/Patient/${created.id}/$reindex`)
    expect(res.status).toBe(200)
    const out = await readJson(res)
    const params = out.parameter.find((p: any) => p.name === 'SearchParameters').part
    const maiden = params.find((p: any) => p.name === 'maiden')
    expect(maiden.part).toContainEqual({ name: 'Action', valueCode: 'Add' })
    expect(await searchTotal('maiden=Oddname')).toBe(1)
    expect((await post('/Patient/does-not-exist/$reindex')).status).toBe(404)
  })
})

describe('$mark-all-resources-for-reindexing and $perform-reindexing-pass', () => {
  test('an unknown type is 400 HAPI-1170', async () => {
    const res = await post('/$mark-all-resources-for-reindexing', { resourceType: 'Parameters', parameter: [{ name: 'type', valueCode: 'Nonsense' }] })
    expect(res.status).toBe(400)
    expect(JSON.stringify(await readJson(res))).toContain('HAPI-1170')
  })

  test('marked resources are reindexed by a pass', async () => {
    await addSearchParameter('maiden2')
    expect(await searchTotal('maiden2=Smithers')).toBe(0)
    const marked = await readJson(
      await post('/$mark-all-resources-for-reindexing', { resourceType: 'Parameters', parameter: [{ name: 'type', valueCode: 'Patient' }] }),
    )
    expect(marked).toEqual({ resourceType: 'Parameters', parameter: [{ name: 'status', valueString: 'Marked resources' }] })
    const [{ pending }] = await s.sql`select count(*)::int as pending from reindex_pending`
    expect(pending).toBeGreaterThan(0)
    const pass = await readJson(await post('/$perform-reindexing-pass'))
    expect(pass.parameter[0].name).toBe('status')
    expect(pass.parameter[0].valueString).toMatch(/^(Indexed \d+ resources|Index pass already proceeding)$/)
    for (let i = 0; i < 100 && (await s.sql`select 1 from reindex_pending limit 1`).length > 0; i++) await Bun.sleep(100)
    expect(await searchTotal('maiden2=Smithers')).toBe(400)
  })

  test('a pass while another holds the lock says so', async () => {
    await s.sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${0x7265_696e})`
      const pass = await readJson(await post('/$perform-reindexing-pass'))
      expect(pass.parameter[0].valueString).toBe('Index pass already proceeding')
    })
  })
})

test('a job whose statement the database refuses for its input fails at once as a 400, not after every retry as a 500', async () => {
  // `%00` is a NUL once the url's own query is decoded: PostgreSQL refuses the value (SQLSTATE 22021).
  const res = await post('/$reindex', { resourceType: 'Parameters', parameter: [{ name: 'url', valueString: 'Patient?_id=%00' }] })
  expect(res.status).toBe(200)
  const id = (await readJson(res)).parameter[0].valueString
  const started = Date.now()
  const job = await waitForJob(id)
  expect(job.state).toBe('failed')
  expect(job.error.status).toBe(400)
  expect(Date.now() - started).toBeLessThan(5000) // five attempts with their backoff take about 30 s
}, 60_000)
