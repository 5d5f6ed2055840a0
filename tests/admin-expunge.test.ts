// $expunge as HAPI FHIR JPA 7.0 (notes/hapi-behaviour.md §3.1): system, type, instance and version level,
// limit (default 1000, < 1 is 400 HAPI-1087), expungeDeletedResources, expungePreviousVersions,
// expungeEverything (system only); Parameters {count}; 412 HAPI-0969 for the current version; 405
// HAPI-0968 when disabled; admin scope. After each kind, no table keyed by rid keeps a row of a resource
// that is gone (every such table, found in the catalog).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { BATCH, expunge } from '../shared/fhir/repo/expunge'
import { ADMIN_KEY, createResource, readJson, startTestServer, useTestServer } from './harness'
import { writes } from './write-expect'

const s = useTestServer()
const { create, put, versionRows } = writes(s)

const params = (...parts: any[]) => ({ resourceType: 'Parameters', parameter: parts })
const bool = (name: string) => ({ name, valueBoolean: true })

async function expungeAt(path: string, body: any, key?: string, query = ''): Promise<Response> {
  return s.fhirFetch(`${path}/$expunge${query}`, { method: 'POST', json: body, key })
}

async function count(path: string, body: any, query = ''): Promise<number> {
  const res = await expungeAt(path, body, undefined, query)
  const out = await readJson(res)
  expect(res.status).toBe(200)
  expect(out.resourceType).toBe('Parameters')
  expect(out.parameter).toHaveLength(1)
  expect(out.parameter[0].name).toBe('count')
  return out.parameter[0].valueInteger
}

/** Every table with a rid column, resource_history included, and its rows whose resource is gone. */
async function orphanRows(): Promise<Record<string, number>> {
  const tables = await s.sql<{ name: string }[]>`
    select table_name as name from information_schema.columns
    where table_schema = current_schema() and column_name = 'rid' and table_name <> 'resource'`
  expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['resource_history', 'idx_token', 'idx_string', 'idx_fulltext']))
  const out: Record<string, number> = {}
  for (const { name } of tables) {
    const [{ n }] = await s.sql<{ n: number }[]>`
      select count(*)::int as n from ${s.sql(name)} t where t.rid is not null and not exists (select 1 from resource r where r.rid = t.rid)`
    if (n > 0) out[name] = n
  }
  return out
}

async function ridOf(type: string, id: string): Promise<string> {
  const [row] = await s.sql<{ rid: string }[]>`select rid::text from resource where res_type = ${type} and id = ${id}`
  return row.rid
}

/** A patient with `versions` versions, the last a deletion when `deleted`. */
async function patient(versions: number, deleted = false): Promise<string> {
  const p = await create({ resourceType: 'Patient', active: true, name: [{ family: 'Expunge' }] })
  for (let v = 2; v <= versions - (deleted ? 1 : 0); v++) expect((await put({ ...p, birthDate: `1970-01-${String(v).padStart(2, '0')}` })).status).toBe(200)
  if (deleted) expect((await s.fhirFetch(`/Patient/${p.id}`, { method: 'DELETE' })).status).toBe(200)
  return p.id
}

beforeAll(async () => {
  // A table of another feature keyed by rid: expunge must clear it without knowing it.
  await s.sql`create table test_owned (rid bigint not null, note text)`
})

describe('input and errors', () => {
  test('limit below 1: 400 HAPI-1087', async () => {
    for (const limit of [0, -5]) {
      const res = await expungeAt('', params({ name: 'limit', valueInteger: limit }, bool('expungeDeletedResources')))
      expect(res.status).toBe(400)
      expect(JSON.stringify(await readJson(res))).toContain('HAPI-1087')
    }
  })

  test('the current version at version level: 412 HAPI-0969; unknown ids and versions: 404', async () => {
    const id = await patient(2)
    const res = await expungeAt(`/Patient/${id}/_history/2`, params(bool('expungePreviousVersions')))
    expect(res.status).toBe(412)
    expect(JSON.stringify(await readJson(res))).toContain('HAPI-0969')
    expect(await versionRows('Patient', id)).toEqual([1, 2])
    expect((await expungeAt(`/Patient/${id}/_history/7`, params(bool('expungePreviousVersions')))).status).toBe(404)
    expect((await expungeAt('/Patient/no-such-id', params(bool('expungeDeletedResources')))).status).toBe(404)
  })

  test('GET is not allowed (405), expungeEverything only at system level (400)', async () => {
    expect((await s.fhirFetch('/$expunge?expungeDeletedResources=true')).status).toBe(405)
    expect((await expungeAt('/Patient', params(bool('expungeEverything')))).status).toBe(400)
  })

  test('needs the admin scope: 403 for a write key, nothing removed', async () => {
    const id = await patient(2, true)
    const { key } = await createApiKey(s.sql, 'expunge-writer', ['write'])
    const res = await expungeAt(`/Patient/${id}`, params(bool('expungeDeletedResources')), key)
    expect(res.status).toBe(403)
    expect(await versionRows('Patient', id)).toEqual([1, 2])
  })

  test('no option: nothing removed, count 0', async () => {
    const id = await patient(2, true)
    expect(await count(`/Patient/${id}`, params())).toBe(0)
    expect(await versionRows('Patient', id)).toEqual([1, 2])
  })
})

describe('instance and version level', () => {
  test('expungeDeletedResources on a deleted resource: every version and owned row removed, read is 404', async () => {
    const id = await patient(3, true)
    const rid = await ridOf('Patient', id)
    await s.sql`insert into reindex_pending (rid) values (${rid})`
    await s.sql`insert into test_owned (rid, note) values (${rid}, 'owned')`
    // A connect-flow mapping names the resource by type and id (no rid): it goes too.
    await s.sql`insert into organization (id, name) values ('org_expunge', 'Expunge') on conflict do nothing`
    await s.sql`insert into patient (organization_id, patient_id) values ('org_expunge', 'p1') on conflict do nothing`
    await s.sql`insert into connect_resource_map (organization_id, patient_id, fhir_source_id, res_type, source_id, our_id)
      values ('org_expunge', 'p1', 'fhirsrc_x', 'Patient', 'source-1', ${id}), ('org_expunge', 'p1', 'fhirsrc_x', 'Patient', 'source-2', 'kept')`
    expect((await s.fhirFetch(`/Patient/${id}`)).status).toBe(410)
    expect(await count(`/Patient/${id}`, params(bool('expungeDeletedResources')))).toBe(3)
    expect((await s.sql`select our_id from connect_resource_map where organization_id = 'org_expunge'`).map((r) => r.our_id)).toEqual(['kept'])
    expect(await versionRows('Patient', id)).toEqual([])
    expect((await s.fhirFetch(`/Patient/${id}`)).status).toBe(404)
    expect((await s.fhirFetch(`/Patient/${id}/_history/1`)).status).toBe(404)
    expect(await orphanRows()).toEqual({})
  })

  test('expungeDeletedResources on a live resource removes nothing', async () => {
    const id = await patient(2)
    expect(await count(`/Patient/${id}`, params(bool('expungeDeletedResources')))).toBe(0)
    expect(await versionRows('Patient', id)).toEqual([1, 2])
  })

  test('expungePreviousVersions at instance level keeps the current version and its index rows', async () => {
    const id = await patient(3)
    const other = await patient(2)
    expect(await count(`/Patient/${id}`, params(bool('expungePreviousVersions')))).toBe(2)
    expect(await versionRows('Patient', id)).toEqual([3])
    expect(await versionRows('Patient', other)).toEqual([1, 2])
    expect((await s.fhirFetch(`/Patient/${id}`)).status).toBe(200)
    expect((await s.fhirFetch(`/Patient/${id}/_history/1`)).status).toBe(404)
    const search = await readJson(await s.fhirFetch(`/Patient?_id=${id}&birthdate=1970-01-03`))
    expect(search.entry?.map((e: any) => e.resource.id)).toEqual([id])
    const history = await readJson(await s.fhirFetch(`/Patient/${id}/_history`))
    expect(history.entry.map((e: any) => e.resource.meta.versionId)).toEqual(['3'])
    expect(await orphanRows()).toEqual({})
  })

  test('version level: one historical version', async () => {
    const id = await patient(3)
    expect(await count(`/Patient/${id}/_history/2`, params(bool('expungePreviousVersions')))).toBe(1)
    expect(await versionRows('Patient', id)).toEqual([1, 3])
    expect((await s.fhirFetch(`/Patient/${id}/_history/2`)).status).toBe(404)
    expect((await s.fhirFetch(`/Patient/${id}/_history/1`)).status).toBe(200)
  })

  test('limit bounds the versions: a deleted resource with 3 versions and limit 2 keeps its tombstone', async () => {
    const id = await patient(3, true)
    expect(await count(`/Patient/${id}`, params({ name: 'limit', valueInteger: 2 }, bool('expungeDeletedResources'), bool('expungePreviousVersions')))).toBe(2)
    expect(await versionRows('Patient', id)).toEqual([3])
    expect((await s.fhirFetch(`/Patient/${id}`)).status).toBe(410)
    expect(await count(`/Patient/${id}`, params(bool('expungeDeletedResources')))).toBe(1)
    expect(await versionRows('Patient', id)).toEqual([])
    expect(await orphanRows()).toEqual({})
  })
})

describe('type and system level', () => {
  test('type level touches only its type; query-string parameters work too', async () => {
    const p = await patient(2)
    const obs = await create({ resourceType: 'Observation', status: 'final', code: { text: 'x' } })
    expect((await put({ ...obs, status: 'amended' })).status).toBe(200)
    const before = await versionRows('Observation', obs.id)
    const n = await count('/Patient', undefined, '?expungePreviousVersions=true')
    expect(n).toBeGreaterThanOrEqual(1)
    expect(await versionRows('Patient', p)).toEqual([2])
    expect(await versionRows('Observation', obs.id)).toEqual(before)
    const [{ left }] = await s.sql<{ left: number }[]>`select count(*)::int as left from resource_history where res_type = 'Patient'`
    expect(left).toBe(0)
  })

  test('system level, both options: only current live versions remain, no orphan anywhere', async () => {
    const deleted = await patient(2, true)
    await s.sql`insert into test_owned (rid, note) values (${await ridOf('Patient', deleted)}, 'owned')`
    const live = await patient(2)
    const obs = await create({ resourceType: 'Observation', status: 'final', code: { text: 'y' } })
    expect((await s.fhirFetch(`/Observation/${obs.id}`, { method: 'DELETE' })).status).toBe(200)
    const [{ hist, tomb }] = await s.sql<{ hist: number; tomb: number }[]>`
      select (select count(*)::int from resource_history) as hist, (select count(*)::int from resource where deleted) as tomb`
    expect(await count('', params(bool('expungeDeletedResources'), bool('expungePreviousVersions')))).toBe(hist + tomb)
    expect(await versionRows('Patient', deleted)).toEqual([])
    expect(await versionRows('Patient', live)).toEqual([2])
    expect(await versionRows('Observation', obs.id)).toEqual([])
    const [{ h, t }] = await s.sql<{ h: number; t: number }[]>`
      select (select count(*)::int from resource_history) as h, (select count(*)::int from resource where deleted) as t`
    expect([h, t]).toEqual([0, 0])
    expect(await orphanRows()).toEqual({})
    const [{ owned }] = await s.sql<{ owned: number }[]>`select count(*)::int as owned from test_owned`
    expect(owned).toBe(0)
  })

  test(`works in batches of at most ${BATCH} versions, each committed, and honours the limit across them`, async () => {
    const n = BATCH + 150
    const bundle = (method: string, ids: string[]) => ({
      resourceType: 'Bundle',
      type: 'transaction',
      entry: ids.map((id) => ({
        request: { method, url: `Basic/${id}` },
        ...(method === 'PUT' ? { resource: { resourceType: 'Basic', id, code: { text: 'bulk' } } } : {}),
      })),
    })
    const ids = Array.from({ length: n }, (_, i) => `bulk-${i}`)
    expect((await s.fhirFetch('', { method: 'POST', json: bundle('PUT', ids) })).status).toBe(200)
    expect((await s.fhirFetch('', { method: 'POST', json: bundle('DELETE', ids) })).status).toBe(200)
    const progress: number[] = []
    const out = await expunge(s.sql, { type: 'Basic' }, { limit: 2 * n - 10, deletedResources: true, previousVersions: false }, (done) => {
      progress.push(done)
    })
    expect(out.count).toBe(2 * n - 10)
    expect(out.removedTypes).toEqual(['Basic'])
    expect(progress.at(-1)).toBe(2 * n - 10)
    for (let i = 0; i < progress.length; i++) expect(progress[i] - (progress[i - 1] ?? 0)).toBeLessThanOrEqual(BATCH)
    expect(progress.length).toBeGreaterThanOrEqual(Math.ceil((2 * n - 10) / BATCH))
    // The rest through HTTP.
    expect(await count('/Basic', params(bool('expungeDeletedResources')))).toBe(10)
    const [{ left }] = await s.sql<{ left: number }[]>`select count(*)::int as left from resource where res_type = 'Basic'`
    expect(left).toBe(0)
    expect(await orphanRows()).toEqual({})
  })
})

describe('as an admin job', () => {
  test('each expunge is a job with its count; Prefer: respond-async answers 202 with its status address', async () => {
    const a = await create({ resourceType: 'Basic', code: { text: 'async-expunge' } })
    await put({ ...a, code: { text: 'async-expunge v2' } })
    const res = await s.fhirFetch(`/Basic/${a.id}/$expunge`, {
      method: 'POST',
      json: params(bool('expungePreviousVersions')),
      headers: { prefer: 'respond-async' },
    })
    expect(res.status).toBe(202)
    const status = res.headers.get('content-location') as string
    expect(status).toMatch(/\/admin\/jobs\/[0-9a-f-]{36}$/)
    let job: any
    for (let i = 0; i < 200; i++) {
      job = await readJson(await fetch(status, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }))
      if (job.state === 'completed') break
      await Bun.sleep(25)
    }
    expect(job).toMatchObject({ kind: 'expunge', state: 'completed', processed: 1, result: { count: 1 } })
    expect(await versionRows('Basic', a.id)).toEqual([2])
  })
})

describe('expungeEverything', () => {
  const SP_CODE = 'expunge-nickname'
  test('removes every resource, version and owned row, and forgets custom search parameters', async () => {
    const sp = await createResource(s, {
      resourceType: 'SearchParameter',
      url: `http://example.org/SearchParameter/${SP_CODE}`,
      name: SP_CODE,
      status: 'active',
      code: SP_CODE,
      base: ['Patient'],
      type: 'string',
      expression: 'Patient.name.given',
      description: 'Given name',
    })
    expect(sp.id).toBeDefined()
    await patient(2, true)
    await patient(3)
    await s.sql`insert into test_owned (rid, note) select rid, 'owned' from resource limit 3`
    // A stored CodeSystem feeds the terminology store (rows owned by its rid); built-in rows (no rid) stay.
    await createResource(s, {
      resourceType: 'CodeSystem',
      url: 'http://example.org/CodeSystem/expunge',
      status: 'active',
      content: 'complete',
      concept: [{ code: 'a', display: 'A' }],
    })
    await s.sql`insert into term_code_system (url, name) values ('http://example.org/CodeSystem/builtin', 'no resource owns this row')`
    const termRows = () => s.sql<{ owned: number; builtin: number }[]>`
      select count(*) filter (where rid is not null)::int as owned, count(*) filter (where rid is null)::int as builtin from term_code_system`
    const [before] = await termRows()
    expect(before.owned).toBe(1)
    expect(before.builtin).toBeGreaterThan(0)
    expect((await s.fhirFetch(`/Patient?${SP_CODE}=x`)).status).toBe(200)
    const [{ total }] = await s.sql<{ total: number }[]>`
      select ((select count(*) from resource) + (select count(*) from resource_history))::int as total`
    expect(await count('', params(bool('expungeEverything')))).toBe(total)
    const tables = await s.sql<{ name: string }[]>`
      select table_name as name from information_schema.columns where table_schema = current_schema() and column_name = 'rid'`
    for (const { name } of tables) {
      const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from ${s.sql(name)} where rid is not null`
      expect({ name, n }).toEqual({ name, n: 0 })
    }
    expect([...(await termRows())]).toEqual([{ owned: 0, builtin: before.builtin }])
    expect(await readJson(await s.fhirFetch('/$get-resource-counts'))).toEqual({ resourceType: 'Parameters' })
    // The custom parameter is gone from this node's registry.
    const unknown = await s.fhirFetch(`/Patient?${SP_CODE}=x`)
    expect(unknown.status).toBe(400)
    // And the server works on: new resources, counted.
    await patient(1)
    expect((await readJson(await s.fhirFetch('/$get-resource-counts'))).parameter).toEqual([{ name: 'Patient', valueInteger: 1 }])
  })
})

describe('disabled by configuration', () => {
  let off: Awaited<ReturnType<typeof startTestServer>>
  beforeAll(async () => {
    off = await startTestServer({ EXPUNGE_ENABLED: 'false' })
  }, 120_000)
  afterAll(async () => {
    await off.stop()
  }, 120_000)
  test('405 HAPI-0968 at every level', async () => {
    for (const path of ['', '/Patient', '/Patient/1']) {
      const res = await off.fhirFetch(`${path}/$expunge`, { method: 'POST', json: params(bool('expungeDeletedResources')) })
      expect(res.status).toBe(405)
      expect(JSON.stringify(await readJson(res))).toContain('HAPI-0968')
    }
  })
})
