// Bulk Data $export over HTTP (Bulk Data Access IG 2.0): kick-off checks, status, manifest, file
// download with the key that started the job, DELETE, _type/_since/_typeFilter/_elements, Patient- and
// Group-level scope, and a consistent snapshot while writes continue. Files in PostgreSQL (the cluster
// default), split into several per type by a small BULK_EXPORT_FILE_MAX_BYTES.
import { beforeAll, describe, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { exportedByType, kickOff, manifestOf, pollStatus, readNdjson } from './bulk-http'
import { ADMIN_KEY, readJson, useTestServer } from './harness'

const s = useTestServer({ BULK_EXPORT_FILE_MAX_BYTES: '4000' })
let exportKey: string
let readKey: string
let otherAdmin: string

const LOINC = 'http://loinc.org'
const patients = ['bulk-p1', 'bulk-p2', 'bulk-p3']

async function put(resource: any): Promise<any> {
  const res = await s.fhirFetch(`/${resource.resourceType}/${resource.id}`, { method: 'PUT', json: resource })
  expect([200, 201]).toContain(res.status)
  return res.json()
}

function observation(id: string, patient: string, code: string): any {
  return { resourceType: 'Observation', id, status: 'final', code: { coding: [{ system: LOINC, code }] }, subject: { reference: `Patient/${patient}` } }
}

beforeAll(async () => {
  exportKey = (await createApiKey(s.sql, 'exporter', ['export'])).key
  readKey = (await createApiKey(s.sql, 'reader', ['read'])).key
  otherAdmin = (await createApiKey(s.sql, 'other admin', ['admin'])).key
  for (const p of patients) await put({ resourceType: 'Patient', id: p, name: [{ family: `Family-${p}`, given: ['Given'] }], gender: 'female' })
  await put({ resourceType: 'Practitioner', id: 'bulk-doc', name: [{ family: 'Doctor' }] })
  for (const [i, p] of patients.entries()) {
    // Enough Observations that a type spans several files of 4,000 bytes.
    for (let k = 0; k < 12; k++) await put(observation(`bulk-o-${i}-${k}`, p, k % 2 === 0 ? '8302-2' : '29463-7'))
    await put({ resourceType: 'Encounter', id: `bulk-e-${i}`, status: 'finished', class: { code: 'AMB' }, subject: { reference: `Patient/${p}` } })
  }
  await put({ resourceType: 'Group', id: 'bulk-g', type: 'person', actual: true, member: [{ entity: { reference: 'Patient/bulk-p2' } }] })
})

describe('kick-off errors (400 with an OperationOutcome before anything is queued)', () => {
  test('no Prefer: respond-async', async () => {
    const res = await s.fhirFetch('/$export')
    expect(res.status).toBe(400)
    const body = await readJson(res)
    expect(body.resourceType).toBe('OperationOutcome')
    expect(body.issue[0].diagnostics).toContain('HAPI-0513')
  })

  test.each([
    ['an unknown parameter', '/$export?_count=10'],
    ['an unsupported _outputFormat', '/$export?_outputFormat=application/json'],
    ['a _since that is not an instant', '/$export?_since=yesterday'],
    ['an unknown _type', '/$export?_type=Patient,Unicorn'],
    ['Binary, which is never exported', '/$export?_type=Binary'],
    ['a _typeFilter with an unknown search parameter', `/$export?_typeFilter=${encodeURIComponent('Observation?colour=red')}`],
    ['a _typeFilter that is not a search', `/$export?_typeFilter=${encodeURIComponent('Observation?_count=5')}`],
    ['a _typeFilter of a type outside _type', `/$export?_type=Patient&_typeFilter=${encodeURIComponent('Observation?code=1')}`],
    ['a Patient-level _type outside the compartment', '/Patient/$export?_type=Practitioner'],
    // Values only the search's compiler or the database refuses: once the job's, retried and failed as a 500.
    ['a _typeFilter with an unknown modifier', `/$export?_typeFilter=${encodeURIComponent('Observation?code:colour=x')}`],
    ['a _typeFilter with a date that is not one', `/$export?_typeFilter=${encodeURIComponent('Observation?date=garbage')}`],
    ['a _typeFilter with an unknown ValueSet', `/$export?_typeFilter=${encodeURIComponent('Observation?code:in=http://example.org/no-such-vs')}`],
    ['a _typeFilter holding a NUL character', `/$export?_typeFilter=${encodeURIComponent('Observation?_id=%00')}`],
    ['a _since before year 1', `/$export?_since=${encodeURIComponent('0000-01-01T00:00:00Z')}`],
    ['a _since past year 9999 in UTC', `/$export?_since=${encodeURIComponent('9999-12-31T23:59:59-14:00')}`],
  ])('%s', async (_what, path) => {
    const res = await s.fhirFetch(path, { headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(400)
    expect((await readJson(res)).resourceType).toBe('OperationOutcome')
  })

  test('more than 100 _typeFilter values is 413', async () => {
    const query = Array.from({ length: 101 }, (_, i) => `_typeFilter=${encodeURIComponent(`Observation?code=c${i}`)}`).join('&')
    const res = await s.fhirFetch(`/$export?${query}`, { headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(413)
  })

  test('handling=lenient lets an unknown parameter through', async () => {
    const url = await kickOff(s, '/$export?_type=Practitioner&foo=bar', { headers: { prefer: 'respond-async, handling=lenient' } })
    const m = await manifestOf(url)
    expect(m.output.map((o: any) => o.type)).toEqual(['Practitioner'])
  })

  test('preferences separated by a semicolon are read as by a comma', async () => {
    const url = await kickOff(s, '/$export?_type=Practitioner&foo=bar', { headers: { prefer: 'respond-async; handling=lenient' } })
    expect((await manifestOf(url)).output.map((o: any) => o.type)).toEqual(['Practitioner'])
  })

  test('a POST body that is not a Parameters resource is 400, not an export of everything', async () => {
    const res = await s.fhirFetch('/$export', { method: 'POST', json: { resourceType: 'Patient', id: 'x' }, headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(400)
    expect((await readJson(res)).issue[0].diagnostics).toContain('Parameters')
  })

  test.each([
    ['no value', { name: '_type' }],
    ['parts instead of a value', { name: '_type', part: [{ name: 'x', valueString: 'Patient' }] }],
  ])('a Parameters _type with %s is 400 naming _type (not "undefined")', async (_what, parameter) => {
    const res = await s.fhirFetch('/$export', {
      method: 'POST',
      json: { resourceType: 'Parameters', parameter: [parameter] },
      headers: { prefer: 'respond-async' },
    })
    expect(res.status).toBe(400)
    const diagnostics = (await readJson(res)).issue[0].diagnostics
    expect(diagnostics).toContain('_type')
    expect(diagnostics).not.toContain('undefined')
  })

  test('an unknown Group is 404', async () => {
    const res = await s.fhirFetch('/Group/no-such-group/$export', { headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(404)
  })

  test('a read-scope key cannot export (403); an export-scope key can', async () => {
    const denied = await s.fhirFetch('/$export', { headers: { prefer: 'respond-async' }, key: readKey })
    expect(denied.status).toBe(403)
    const url = await kickOff(s, '/$export?_type=Patient', { key: exportKey })
    expect((await manifestOf(url, exportKey)).output[0].count).toBe(3)
  })
})

describe('system-level export', () => {
  let statusUrl: string
  let manifest: any

  test('202 with a status URL, then 202 X-Progress while running, then the manifest', async () => {
    statusUrl = await kickOff(s, '/$export')
    const { res, progress } = await pollStatus(statusUrl)
    expect(res.status).toBe(200)
    expect(progress.length).toBeGreaterThan(0) // the job ends a second after transactionTime at the soonest (it settles)
    manifest = await res.json()
    expect(res.headers.get('expires')).toBeTruthy()
    expect(manifest.requiresAccessToken).toBe(true)
    expect(manifest.request).toBe(`${s.fhir}/$export`)
    expect(Date.parse(manifest.transactionTime)).toBeGreaterThan(0)
    expect(manifest.error).toEqual([])
  })

  test('every resource once, in files split past the size limit, each line of the file type', async () => {
    const byType = await exportedByType(manifest)
    expect([...byType.keys()].sort()).toEqual(['Encounter', 'Group', 'Observation', 'Patient', 'Practitioner'])
    expect(byType.get('Observation')?.length).toBe(36)
    expect(new Set(byType.get('Observation')?.map((o) => o.id)).size).toBe(36)
    expect(manifest.output.filter((o: any) => o.type === 'Observation').length).toBeGreaterThan(1) // split
    const stored = await readJson(await s.fhirFetch('/Patient/bulk-p1'))
    expect(byType.get('Patient')?.find((p) => p.id === 'bulk-p1')).toEqual(stored)
  })

  test('files need the key that started the job: another key (even admin) gets 404, no key 401', async () => {
    const url = manifest.output[0].url
    expect((await fetch(url, { headers: { authorization: `Bearer ${otherAdmin}` } })).status).toBe(404)
    expect((await fetch(url)).status).toBe(401)
    expect((await fetch(statusUrl, { headers: { authorization: `Bearer ${otherAdmin}` } })).status).toBe(404)
    expect((await readNdjson(url, ADMIN_KEY)).length).toBeGreaterThan(0)
  })

  test('DELETE removes the files: the status and the files answer 404 after it', async () => {
    const del = await fetch(statusUrl, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    expect(del.status).toBe(202)
    expect((await fetch(statusUrl, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).status).toBe(404)
    expect((await fetch(manifest.output[0].url, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).status).toBe(404)
    const jobId = new URL(statusUrl).searchParams.get('_jobId')
    const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from bulk_chunk where job_id = ${jobId}`
    expect(n).toBe(0)
  })
})

describe('the status URL by POST and HEAD', () => {
  test('POST answers as GET (HAPI takes the operation both ways), _jobId in the query or a Parameters body; HEAD gives the headers', async () => {
    const statusUrl = await kickOff(s, '/$export?_type=Practitioner')
    const manifest = await manifestOf(statusUrl)
    const auth = { authorization: `Bearer ${ADMIN_KEY}` }
    const post = await fetch(statusUrl, { method: 'POST', headers: auth })
    expect(post.status).toBe(200)
    expect(await post.json()).toEqual(manifest)
    const id = new URL(statusUrl).searchParams.get('_jobId')
    const byBody = await fetch(statusUrl.split('?')[0], {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: '_jobId', valueString: id }] }),
    })
    expect(byBody.status).toBe(200)
    expect(await byBody.json()).toEqual(manifest)
    const head = await fetch(statusUrl, { method: 'HEAD', headers: auth })
    expect(head.status).toBe(200)
    expect(head.headers.get('expires')).toBeTruthy()
    expect(await head.text()).toBe('')
  })
})

describe('filters', () => {
  test('_type: only the types named', async () => {
    const m = await manifestOf(await kickOff(s, '/$export?_type=Patient,Practitioner'))
    expect([...new Set(m.output.map((o: any) => o.type))].sort()).toEqual(['Patient', 'Practitioner'])
  })

  test('_since: only resources written after the instant', async () => {
    await Bun.sleep(20)
    const since = new Date().toISOString()
    await Bun.sleep(20)
    await put({ resourceType: 'Patient', id: 'bulk-p1', name: [{ family: 'Renamed' }], gender: 'female' })
    const byType = await exportedByType(await manifestOf(await kickOff(s, `/$export?_since=${encodeURIComponent(since)}`)))
    expect([...byType.keys()]).toEqual(['Patient'])
    expect(byType.get('Patient')?.map((p) => p.id)).toEqual(['bulk-p1'])
  })

  test("a '+' a client did not percent-encode (application/fhir+ndjson, a +hh:mm zone) is read as written", async () => {
    await Bun.sleep(20)
    const since = new Date().toISOString().replace('Z', '+00:00')
    await Bun.sleep(20)
    await put({ resourceType: 'Patient', id: 'bulk-p2', name: [{ family: 'Plus' }], gender: 'female' })
    // As curl sends them typed by hand: the query string decodes each '+' as a space.
    const byType = await exportedByType(await manifestOf(await kickOff(s, `/$export?_outputFormat=application/fhir+ndjson&_since=${since}`)))
    expect([...byType.keys()]).toEqual(['Patient'])
    expect(byType.get('Patient')?.map((p) => p.id)).toEqual(['bulk-p2'])
  })

  test('_typeFilter selects within its type; other _type types come whole', async () => {
    const filter = encodeURIComponent(`Observation?code=${LOINC}|8302-2`)
    const byType = await exportedByType(await manifestOf(await kickOff(s, `/$export?_type=Observation,Patient&_typeFilter=${filter}`)))
    expect(byType.get('Observation')?.length).toBe(18)
    expect(byType.get('Observation')?.every((o) => o.code.coding[0].code === '8302-2')).toBe(true)
    expect(byType.get('Patient')?.length).toBe(3)
  })

  test('two _typeFilters of one type are ORed', async () => {
    const a = encodeURIComponent('Observation?subject=Patient/bulk-p1')
    const b = encodeURIComponent('Observation?subject=Patient/bulk-p3')
    const byType = await exportedByType(await manifestOf(await kickOff(s, `/$export?_type=Observation&_typeFilter=${a}&_typeFilter=${b}`)))
    expect(new Set(byType.get('Observation')?.map((o) => o.subject.reference))).toEqual(new Set(['Patient/bulk-p1', 'Patient/bulk-p3']))
  })

  test('_typeFilter values joined by commas (IG 1.0 form, which HAPI splits) are each a filter of its own type', async () => {
    // Each filter is URL-encoded, the comma between them is not; a comma inside a filter stays an OR of values.
    const joined = [`Observation?code=${LOINC}|8302-2`, 'Patient?_id=bulk-p2,bulk-p3'].map(encodeURIComponent).join(',')
    const byType = await exportedByType(await manifestOf(await kickOff(s, `/$export?_type=Observation,Patient&_typeFilter=${joined}`)))
    expect(byType.get('Observation')?.length).toBe(18)
    expect(
      byType
        .get('Patient')
        ?.map((p) => p.id)
        .sort(),
    ).toEqual(['bulk-p2', 'bulk-p3'])
  })

  test('_elements: the named elements, id and meta, tagged SUBSETTED', async () => {
    const byType = await exportedByType(await manifestOf(await kickOff(s, '/$export?_type=Patient&_elements=Patient.gender')))
    for (const p of byType.get('Patient') ?? []) {
      expect(Object.keys(p).sort()).toEqual(['gender', 'id', 'meta', 'resourceType'])
      expect(p.meta.tag.some((t: any) => t.code === 'SUBSETTED')).toBe(true)
    }
  })

  test('POST with a Parameters body (repeated _type values)', async () => {
    const body = {
      resourceType: 'Parameters',
      parameter: [
        { name: '_type', valueString: 'Encounter' },
        { name: '_type', valueString: 'Practitioner' },
        { name: '_outputFormat', valueString: 'ndjson' },
      ],
    }
    const m = await manifestOf(await kickOff(s, '/$export', { method: 'POST', json: body }))
    expect(m.output.map((o: any) => o.type).sort()).toEqual(['Encounter', 'Practitioner'])
    expect(m.request).toBe(`${s.fhir}/$export`)
  })
})

describe('Patient- and Group-level export', () => {
  test("Patient/$export: the patients and their compartments (a Group is in its members' ones), nothing else", async () => {
    const byType = await exportedByType(await manifestOf(await kickOff(s, '/Patient/$export')))
    expect([...byType.keys()].sort()).toEqual(['Encounter', 'Group', 'Observation', 'Patient'])
    expect(byType.get('Observation')?.length).toBe(36)
  })

  test('Patient/$export with patient (POST): only those patients', async () => {
    const body = { resourceType: 'Parameters', parameter: [{ name: 'patient', valueReference: { reference: 'Patient/bulk-p3' } }] }
    const byType = await exportedByType(await manifestOf(await kickOff(s, '/Patient/$export', { method: 'POST', json: body })))
    expect(byType.get('Patient')?.map((p) => p.id)).toEqual(['bulk-p3'])
    expect(byType.get('Observation')?.every((o) => o.subject.reference === 'Patient/bulk-p3')).toBe(true)
    expect(byType.get('Encounter')?.map((e) => e.id)).toEqual(['bulk-e-2'])
  })

  test('Group/{id}/$export: its member patients only', async () => {
    const byType = await exportedByType(await manifestOf(await kickOff(s, '/Group/bulk-g/$export?_type=Patient,Observation')))
    expect(byType.get('Patient')?.map((p) => p.id)).toEqual(['bulk-p2'])
    expect(byType.get('Observation')?.length).toBe(12)
    expect(byType.get('Observation')?.every((o) => o.subject.reference === 'Patient/bulk-p2')).toBe(true)
  })

  test('Group/{id}/$export with patient (POST): the named patients that are members, no others', async () => {
    const body = {
      resourceType: 'Parameters',
      parameter: [
        { name: 'patient', valueReference: { reference: 'Patient/bulk-p2' } },
        { name: 'patient', valueReference: { reference: 'Patient/bulk-p3' } },
      ],
    }
    const byType = await exportedByType(await manifestOf(await kickOff(s, '/Group/bulk-g/$export?_type=Patient', { method: 'POST', json: body })))
    expect(byType.get('Patient')?.map((p) => p.id)).toEqual(['bulk-p2'])
  })

  test("patient as an absolute reference on this server's base is that patient; on another server's, 400", async () => {
    const body = (reference: string) => ({ resourceType: 'Parameters', parameter: [{ name: 'patient', valueReference: { reference } }] })
    const url = await kickOff(s, '/Patient/$export?_type=Patient', { method: 'POST', json: body(`${s.fhir}/Patient/bulk-p3`) })
    expect((await exportedByType(await manifestOf(url))).get('Patient')?.map((p) => p.id)).toEqual(['bulk-p3'])
    const other = await s.fhirFetch('/Patient/$export', {
      method: 'POST',
      json: body('http://elsewhere.example/fhir/Patient/bulk-p3'),
      headers: { prefer: 'respond-async' },
    })
    expect(other.status).toBe(400)
  })

  test('an unknown patient is 404', async () => {
    const body = { resourceType: 'Parameters', parameter: [{ name: 'patient', valueReference: { reference: 'Patient/nobody' } }] }
    const res = await s.fhirFetch('/Patient/$export', { method: 'POST', json: body, headers: { prefer: 'respond-async' } })
    expect(res.status).toBe(404)
  })
})

describe('consistency as of transactionTime', () => {
  test('writes right after the kick-off are not in the export: the version as of transactionTime is', async () => {
    await put({ resourceType: 'Patient', id: 'bulk-p2', name: [{ family: 'Before' }], gender: 'female' })
    const url = await kickOff(s, '/Group/bulk-g/$export?_type=Patient,Observation')
    // Written after transactionTime, whether before or after the job reads them: they must not show.
    await put({ resourceType: 'Patient', id: 'bulk-p2', name: [{ family: 'After' }], gender: 'female' })
    await put(observation('bulk-o-new', 'bulk-p2', '8302-2'))
    const del = await s.fhirFetch('/Observation/bulk-o-1-0', { method: 'DELETE' })
    expect(del.status).toBe(200)
    const byType = await exportedByType(await manifestOf(url))
    expect(byType.get('Patient')?.[0].name[0].family).toBe('Before')
    const ids = byType.get('Observation')?.map((o) => o.id) ?? []
    expect(ids).not.toContain('bulk-o-new')
    expect(ids).toContain('bulk-o-1-0') // deleted after transactionTime: still in
    expect(ids.length).toBe(12)
  })

  test('writes stamped before the kick-off that commit while the export reads are in it, each resource once', async () => {
    // The job reads while transactionTime settles, then reads again the rows late writes changed: a
    // transaction begun before the kick-off creates one Patient (a rid below every other, so the scan
    // has passed it) and updates another, and commits once the job is reading.
    const stamped = new Date(Date.now() - 200).toISOString()
    const late = (id: string, version: number, family: string) =>
      JSON.stringify({ resourceType: 'Patient', id, meta: { versionId: String(version), lastUpdated: stamped }, name: [{ family }] })
    let commit: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      commit = resolve
    })
    let begun: () => void = () => {}
    const writing = new Promise<void>((resolve) => {
      begun = resolve
    })
    const tx = s.sql.begin(async (tx) => {
      await tx`insert into resource (rid, res_type, id, version, last_updated, content) values (1, 'Patient', 'bulk-late', 1, ${stamped}, ${late('bulk-late', 1, 'Late')})`
      await tx`insert into resource_history (rid, version, res_type, id, last_updated, deleted, content)
        select rid, version, res_type, id, last_updated, deleted, content from resource where res_type = 'Patient' and id = 'bulk-p3'`
      await tx`update resource set version = version + 1, last_updated = ${stamped}, content = ${late('bulk-p3', 9, 'Updated')} where res_type = 'Patient' and id = 'bulk-p3'`
      begun()
      await held
    })
    await writing
    const url = await kickOff(s, '/$export?_type=Patient')
    await Bun.sleep(400) // the job has read every Patient by now
    commit()
    await tx
    try {
      const patients = (await exportedByType(await manifestOf(url))).get('Patient') ?? []
      expect(patients.filter((p) => p.id === 'bulk-late').map((p) => p.name[0].family)).toEqual(['Late'])
      expect(patients.filter((p) => p.id === 'bulk-p3').map((p) => p.name[0].family)).toEqual(['Updated'])
    } finally {
      await s.sql`delete from resource where rid = 1`
    }
  })
})

test('the CapabilityStatement declares Bulk Data: $export at system, Patient and Group level, $import', async () => {
  const cs = await readJson(await s.fhirFetch('/metadata'))
  expect(cs.instantiates).toContain('http://hl7.org/fhir/uv/bulkdata/CapabilityStatement/bulk-data')
  const names = (ops: any[]) => ops.map((o) => o.name)
  expect(names(cs.rest[0].operation)).toEqual(expect.arrayContaining(['export', 'import']))
  const ops = (type: string) => cs.rest[0].resource.find((r: any) => r.type === type).operation
  expect(ops('Patient').find((o: any) => o.name === 'export').definition).toBe('http://hl7.org/fhir/uv/bulkdata/OperationDefinition/patient-export')
  expect(ops('Group').find((o: any) => o.name === 'export').definition).toBe('http://hl7.org/fhir/uv/bulkdata/OperationDefinition/group-export')
  expect(names(ops('Observation'))).not.toContain('export')
})
