// Bulk Data $import over HTTP, with HAPI's Parameters body, from a local origin on the import allow-list:
// kick-off checks, update-as-create by id with indexes written, every line validated (bad lines in an
// OperationOutcome NDJSON file with their line numbers, the rest stored), no referential-integrity order,
// a re-run that writes nothing, a changed file that writes new versions, inputs that cannot be read,
// an input that goes idle and is read again from the checkpoint with Range, and cancel. Files in a folder
// (BULK_STORAGE_DIR), as a cluster with a shared folder or the embedded form keeps them.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApiKey } from '../shared/auth/api-keys'
import { ASYNC, kickOff, manifestOf, pollStatus, readNdjson } from './bulk-http'
import { ADMIN_KEY, readJson, useTestServer } from './harness'
import { importBody, ndjson, startNdjsonOrigin } from './ndjson-origin'

const origin = startNdjsonOrigin()
const dir = mkdtempSync(join(tmpdir(), 'bulk-import-test-'))
// The origin is on the import allow-list; as a loopback address, the outbound client reaches it only
// because OUTBOUND_ALLOW names it. 127.0.0.2 is on the import list but not on OUTBOUND_ALLOW.
const s = useTestServer({
  BULK_IMPORT_ORIGINS: `${origin.origin},http://127.0.0.2:9`,
  OUTBOUND_ALLOW: '127.0.0.1',
  BULK_STORAGE_DIR: dir,
  BULK_IMPORT_MAX_LINE_BYTES: '20000',
  BULK_IMPORT_IDLE_TIMEOUT_MS: '1000',
})
afterAll(() => {
  origin.stop()
  rmSync(dir, { recursive: true, force: true })
})

const patient = (id: string, family: string) => ({ resourceType: 'Patient', id, name: [{ family }], gender: 'male' })
const observation = (id: string, patientId: string) => ({
  resourceType: 'Observation',
  id,
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
  subject: { reference: `Patient/${patientId}` },
})

async function importAndWait(inputs: { type: string; url: string }[]): Promise<any> {
  return manifestOf(await kickOff(s, '/$import', { method: 'POST', json: importBody(inputs) }))
}

async function versionsOf(type: string, id: string): Promise<number[]> {
  const rows = await s.sql<{ version: number }[]>`
    select version from resource where res_type = ${type} and id = ${id}
    union all select h.version from resource_history h join resource r on r.rid = h.rid where r.res_type = ${type} and r.id = ${id}
    order by 1`
  return rows.map((r) => r.version)
}

describe('kick-off errors', () => {
  const url = origin.put('/one.ndjson', ndjson([patient('imp-one', 'One')]))
  test.each([
    ['no Prefer: respond-async', {}, importBody([{ type: 'Patient', url }]), 'HAPI-0513'],
    ['another inputFormat', ASYNC, { resourceType: 'Parameters', parameter: [{ name: 'inputFormat', valueCode: 'application/json' }] }, 'HAPI-2048'],
    ['no input', ASYNC, importBody([]), 'No URLs specified'],
    [
      'an input without url',
      ASYNC,
      { ...(importBody([]) as any), parameter: [...(importBody([]) as any).parameter, { name: 'input', part: [{ name: 'type', valueCode: 'Patient' }] }] },
      'Missing url',
    ],
    ['an origin not on the allow-list', ASYNC, importBody([{ type: 'Patient', url: 'http://169.254.169.254/latest/meta-data' }]), 'BULK_IMPORT_ORIGINS'],
    // On the import allow-list, but an internal address OUTBOUND_ALLOW does not name: the outbound client refuses it.
    ['an internal address the outbound client refuses', ASYNC, importBody([{ type: 'Patient', url: 'http://127.0.0.2:9/p.ndjson' }]), '127.0.0.2'],
    ['an unknown type', ASYNC, importBody([{ type: 'Unicorn', url }]), 'Unicorn'],
    ['not a Parameters body', ASYNC, { resourceType: 'Patient' }, 'Parameters'],
    ['an unknown parameter', ASYNC, importBody([{ type: 'Patient', url }], [{ name: 'speed', valueString: 'fast' }]), 'speed'],
  ])('%s: 400', async (_what, headers, body, text) => {
    const res = await s.fhirFetch('/$import', { method: 'POST', json: body, headers })
    expect(res.status).toBe(400)
    const outcome = await readJson(res)
    expect(outcome.resourceType).toBe('OperationOutcome')
    expect(JSON.stringify(outcome)).toContain(text)
  })

  test('credentials for the source are refused (never stored)', async () => {
    const body = importBody([{ type: 'Patient', url }], [{ name: 'storageDetail', part: [{ name: 'credentialHttpBasic', valueString: 'user:secret' }] }])
    const res = await s.fhirFetch('/$import', { method: 'POST', json: body, headers: ASYNC })
    expect(res.status).toBe(405)
  })

  test('an export-scope key cannot import (403)', async () => {
    const { key } = await createApiKey(s.sql, 'exporter', ['export'])
    const res = await s.fhirFetch('/$import', { method: 'POST', json: importBody([{ type: 'Patient', url }]), headers: ASYNC, key })
    expect(res.status).toBe(403)
  })
})

describe('import', () => {
  // Observations first: they reference Patients that only the second file brings.
  const observations = [observation('imp-o1', 'imp-p1'), observation('imp-o2', 'imp-p2')]
  const obsText = [
    JSON.stringify(observations[0]),
    '{"resourceType": "Observation", "id": "imp-bad-json", ', // line 2: not JSON
    '',
    JSON.stringify({ ...observation('imp-o3', 'imp-p1'), colour: 'red' }), // line 4: an unknown element
    JSON.stringify(observations[1]),
    JSON.stringify({ resourceType: 'Observation', status: 'final', code: { text: 'no id' } }), // line 6: no id
    JSON.stringify({ ...observation('imp-o4', 'imp-p1'), note: [{ text: 'x'.repeat(30_000) }] }), // line 7: longer than the limit
    JSON.stringify(observation('imp-o5', 'imp-p2')),
  ].join('\n')
  const patients = [patient('imp-p1', 'Alpha'), patient('imp-p2', 'Beta')]
  const obsUrl = origin.put('/observations.ndjson', obsText)
  const patUrl = origin.put('/patients.ndjson', `${ndjson(patients)}\r\n\n`)
  let manifest: any
  let statusUrl: string

  test('valid lines stored in any order, bad ones reported with their line numbers', async () => {
    statusUrl = await kickOff(s, '/$import', {
      method: 'POST',
      json: importBody([
        { type: 'Observation', url: obsUrl },
        { type: 'Patient', url: patUrl },
      ]),
    })
    manifest = await manifestOf(statusUrl)
    expect(manifest.requiresAccessToken).toBe(true)
    expect(manifest.output).toEqual([
      { type: 'Observation', inputUrl: obsUrl, count: 3, created: 3, updated: 0, unchanged: 0 },
      { type: 'Patient', inputUrl: patUrl, count: 2, created: 2, updated: 0, unchanged: 0 },
    ])
    expect(manifest.error).toHaveLength(1)
    expect(manifest.error[0]).toMatchObject({ type: 'OperationOutcome', inputUrl: obsUrl, count: 4 })
    const outcomes = await readNdjson(manifest.error[0].url)
    expect(outcomes.map((o) => o.issue[0].location)).toEqual([['Line[2]'], ['Line[4]'], ['Line[6]'], ['Line[7]']])
    expect(outcomes[0].issue[0].diagnostics).toContain('HAPI-1861')
    expect(outcomes[1].issue[0].diagnostics).toContain("Unrecognized element 'colour'")
    expect(outcomes[2].issue[0].diagnostics).toContain('no id')
    expect(outcomes[3].issue[0].diagnostics).toContain('BULK_IMPORT_MAX_LINE_BYTES')
  })

  test('stored as update-as-create by id, version 1, searchable (index rows written)', async () => {
    const read = await readJson(await s.fhirFetch('/Observation/imp-o5'))
    expect(read.meta.versionId).toBe('1')
    expect(read.subject.reference).toBe('Patient/imp-p2')
    const search = await readJson(await s.fhirFetch('/Observation?subject=Patient/imp-p1&code=http://loinc.org|8302-2'))
    expect(search.entry.map((e: any) => e.resource.id)).toEqual(['imp-o1'])
    const byName = await readJson(await s.fhirFetch('/Patient?name=beta'))
    expect(byName.entry.map((e: any) => e.resource.id)).toEqual(['imp-p2'])
  })

  test('the same import again: every resource unchanged, no new version, no new row', async () => {
    const [{ n: before }] = await s.sql<{ n: number }[]>`select (select count(*) from resource) + (select count(*) from resource_history) as n`
    const again = await importAndWait([
      { type: 'Observation', url: obsUrl },
      { type: 'Patient', url: patUrl },
    ])
    expect(again.output.map((o: any) => [o.created, o.updated, o.unchanged])).toEqual([
      [0, 0, 3],
      [0, 0, 2],
    ])
    const [{ n: after }] = await s.sql<{ n: number }[]>`select (select count(*) from resource) + (select count(*) from resource_history) as n`
    expect(after).toBe(before)
    expect(await versionsOf('Patient', 'imp-p1')).toEqual([1])
  })

  test('a changed resource gets a new version; the others none', async () => {
    const url = origin.put('/patients-v2.ndjson', ndjson([patient('imp-p1', 'Alpha-2'), patients[1]]))
    const m = await importAndWait([{ type: 'Patient', url }])
    expect(m.output[0]).toMatchObject({ created: 0, updated: 1, unchanged: 1 })
    expect(await versionsOf('Patient', 'imp-p1')).toEqual([1, 2])
    expect(await versionsOf('Patient', 'imp-p2')).toEqual([1])
    expect((await readJson(await s.fhirFetch('/Patient?name=alpha-2'))).entry).toHaveLength(1)
  })

  test('the job is listed in /admin/jobs with its per-file progress', async () => {
    const id = new URL(statusUrl).searchParams.get('_jobId')
    const res = await fetch(`${s.base}/admin/jobs/${id}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    const job: any = await res.json()
    expect(job).toMatchObject({ kind: 'bulk-import', state: 'completed', processed: 12 })
    expect(job.cursor.inputs.map((i: any) => [i.lines, i.errors, i.done])).toEqual([
      [8, 4, true],
      [4, 0, true], // blank lines are counted
    ])
  })
})

describe('inputs that cannot be read', () => {
  test('a redirect, a 404: the input is reported as failed, the others are imported', async () => {
    const good = origin.put('/good.ndjson', ndjson([patient('imp-good', 'Good')]))
    const m = await importAndWait([
      { type: 'Patient', url: `${origin.origin}/redirect` },
      { type: 'Patient', url: `${origin.origin}/missing.ndjson` },
      { type: 'Patient', url: good },
    ])
    expect(m.output.map((o: any) => o.failure ?? 'ok')).toEqual([expect.stringContaining('redirect'), expect.stringContaining('404'), 'ok'])
    expect(m.error.map((e: any) => e.inputUrl)).toEqual([`${origin.origin}/redirect`, `${origin.origin}/missing.ndjson`])
    expect((await s.fhirFetch('/Patient/imp-good')).status).toBe(200)
    expect(origin.requests.filter((r) => r.path === '/patients.ndjson' && r.range === null).length).toBe(2) // the redirect was not followed
  })

  test('an input that cannot be read: its error file says why, as its failure does', async () => {
    const url = `${origin.origin}/nowhere.ndjson`
    const m = await importAndWait([{ type: 'Patient', url }])
    expect(m.output[0].failure).toContain('404')
    const [outcome] = await readNdjson(m.error[0].url)
    expect(outcome.issue[0].diagnostics).toBe(`The input: ${m.output[0].failure}`)
    expect(outcome.issue[0].location).toEqual(['Line[0]'])
  })

  test('an input that goes idle is read again from the checkpoint, with Range, without duplicates', async () => {
    const many = Array.from({ length: 3000 }, (_, i) => patient(`imp-idle-${i}`, `Idle${i}`))
    const text = ndjson(many)
    const url = origin.put('/idle.ndjson', text)
    origin.stallOnce('/idle.ndjson', Math.floor(text.length * 0.6))
    const m = await importAndWait([{ type: 'Patient', url }])
    expect(m.output[0]).toMatchObject({ count: 3000, created: 3000 })
    const ranges = origin.requests.filter((r) => r.path === '/idle.ndjson').map((r) => r.range)
    expect(ranges[0]).toBeNull()
    expect(ranges[1]).toMatch(/^bytes=[1-9]\d*-$/) // resumed after the last committed batch
    const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from resource where id like 'imp-idle-%'`
    expect(n).toBe(3000)
    const [{ h }] = await s.sql<{ h: number }[]>`select count(*)::int as h from resource_history where id like 'imp-idle-%'`
    expect(h).toBe(0)
  }, 60_000)

  test('an input that trickles bytes without a line end is given up and read again', async () => {
    const url = origin.put('/trickle.ndjson', ndjson([patient('imp-trickle', 'Trickle')]))
    origin.trickleOnce('/trickle.ndjson')
    const started = Date.now()
    const m = await importAndWait([{ type: 'Patient', url }])
    expect(m.output[0]).toMatchObject({ created: 1 })
    expect(origin.requests.filter((r) => r.path === '/trickle.ndjson').length).toBe(2)
    expect(Date.now() - started).toBeGreaterThan(1000) // the first read went on for the idle limit
  }, 60_000)
})

describe('cancel', () => {
  test('DELETE on the status URL cancels a running import; its status is then 404', async () => {
    const url = origin.put('/cancel.ndjson', ndjson(Array.from({ length: 20_000 }, (_, i) => patient(`imp-cancel-${i}`, `C${i}`))))
    const statusUrl = await kickOff(s, '/$import', {
      method: 'POST',
      json: importBody([{ type: 'Patient', url }], [{ name: 'storageDetail', part: [{ name: 'maxBatchResourceCount', valueString: '100' }] }]),
    })
    const id = new URL(statusUrl).searchParams.get('_jobId')
    for (let i = 0; i < 200; i++) {
      const [row] = await s.sql`select processed::int from admin_job where id = ${id}`
      if (row.processed > 0) break
      await Bun.sleep(25)
    }
    const del = await fetch(statusUrl, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    expect(del.status).toBe(202)
    for (let i = 0; i < 200; i++) {
      const [row] = await s.sql`select state from admin_job where id = ${id}`
      if (row.state !== 'running') break
      await Bun.sleep(50)
    }
    const [job] = await s.sql<{ state: string; processed: number }[]>`select state, processed::int from admin_job where id = ${id}`
    expect(job.state).toBe('cancelled')
    expect(job.processed).toBeLessThan(20_000)
    expect((await pollStatus(statusUrl)).res.status).toBe(404)
  })
})

describe('uploaded inputs ($bulk-upload, as `bun run import --ndjson` sends local files)', () => {
  test('a file uploaded in two parts is imported as one input, its line numbers those of the whole file', async () => {
    const lines = [JSON.stringify(patient('imp-up-1', 'Up')), '{"not": "a resource"}', JSON.stringify(patient('imp-up-2', 'Up'))]
    const first = await s.fhirFetch('/$bulk-upload', { method: 'POST', body: `${lines[0]}\n`, headers: { 'content-type': 'application/fhir+ndjson' } })
    expect(first.status).toBe(201)
    const url = first.headers.get('location') as string
    const id = url.split('/').at(-2)
    const second = await s.fhirFetch(`/$bulk-upload?upload=${id}`, { method: 'POST', body: `${lines[1]}\n${lines[2]}\n` })
    expect(second.status).toBe(200)
    expect(await (await fetch(url, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).text()).toBe(`${lines.join('\n')}\n`)

    const m = await importAndWait([{ type: 'Patient', url }])
    expect(m.output[0]).toMatchObject({ inputUrl: url, created: 2 })
    const outcomes = await readNdjson(m.error[0].url)
    expect(outcomes.map((o) => o.issue[0].location)).toEqual([['Line[2]']])
  })

  test("another key's upload is not found, and not an input of its imports", async () => {
    const up = await s.fhirFetch('/$bulk-upload', { method: 'POST', body: `${JSON.stringify(patient('imp-up-3', 'Up'))}\n` })
    const url = up.headers.get('location') as string
    const { key } = await createApiKey(s.sql, 'another admin', ['admin'])
    expect((await fetch(url, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404)
    const res = await s.fhirFetch('/$import', { method: 'POST', json: importBody([{ type: 'Patient', url }]), headers: ASYNC, key })
    expect(res.status).toBe(404)
  })

  test('an id that is not a UUID names no upload nor file: 404, not the database refusing it', async () => {
    const dashes = '-'.repeat(36)
    for (const path of [`/$bulk-upload?upload=${dashes}`, `/$bulk-file/${dashes}/Patient-1`, `/$bulk-file/${dashes}/input`]) {
      const res = await s.fhirFetch(path, {
        method: path.startsWith('/$bulk-upload') ? 'POST' : 'GET',
        body: path.startsWith('/$bulk-upload') ? '{}\n' : undefined,
      })
      expect(`${path} ${res.status}`).toBe(`${path} 404`)
      expect((await readJson(res)).resourceType).toBe('OperationOutcome')
    }
  })

  test('an upload that is not UTF-8 is refused', async () => {
    const res = await s.fhirFetch('/$bulk-upload', { method: 'POST', body: new Uint8Array([0x7b, 0xff, 0x7d, 0x0a]) })
    expect(res.status).toBe(400)
  })
})
