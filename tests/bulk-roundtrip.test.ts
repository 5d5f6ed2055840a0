// The round trip on the Synthea sample: every bundle loaded into one server by transaction (server-
// assigned ids), everything exported, the files imported into an empty server, and every resource comes
// back equal (content apart from meta.versionId and meta.lastUpdated, which each server sets) with the
// same counts per type. The ids the first server assigned are numeric: the import takes them, and the
// second server's own ids then start past them.
import { afterAll, expect, test } from 'bun:test'
import { sameContent } from '../shared/fhir/resource-meta'
import { exportedByType, kickOff, manifestOf } from './bulk-http'
import { ADMIN_KEY, readJson, useTestServer } from './harness'
import { syntheaFiles } from './load-data'
import { importBody, ndjson, startNdjsonOrigin } from './ndjson-origin'

const origin = startNdjsonOrigin()
const source = useTestServer()
const target = useTestServer({ BULK_IMPORT_ORIGINS: origin.origin, OUTBOUND_ALLOW: '127.0.0.1' })
afterAll(() => origin.stop())

async function contents(s: typeof source): Promise<Map<string, any>> {
  const rows = await s.sql<{ res_type: string; id: string; content: string }[]>`select res_type, id, content from resource where not deleted`
  return new Map(rows.map((r) => [`${r.res_type}/${r.id}`, JSON.parse(r.content)]))
}

test('export -> import into an empty database: every resource back, equal, with the same counts per type', async () => {
  for (const file of syntheaFiles()) {
    const res = await source.fhirFetch('', { method: 'POST', body: await Bun.file(file).text(), headers: { 'content-type': 'application/fhir+json' } })
    expect(res.status).toBe(200)
    await res.arrayBuffer()
  }
  const manifest = await manifestOf(await kickOff(source, '/$export'))
  const byType = await exportedByType(manifest)
  const inputs = [...byType.entries()].map(([type, resources]) => ({ type, url: origin.put(`/${type}.ndjson`, ndjson(resources)) }))
  const imported = await manifestOf(await kickOff(target, '/$import', { method: 'POST', json: importBody(inputs) }))
  expect(imported.error).toEqual([])

  const before = await contents(source)
  const after = await contents(target)
  expect(before.size).toBeGreaterThan(13_000)
  expect(after.size).toBe(before.size)
  const countsOf = (m: Map<string, any>) => [...m.values()].reduce((c, r) => c.set(r.resourceType, (c.get(r.resourceType) ?? 0) + 1), new Map<string, number>())
  expect(countsOf(after)).toEqual(countsOf(before))
  const different = [...before].filter(([key, r]) => !after.has(key) || !sameContent(after.get(key), r)).map(([key]) => key)
  expect(different).toEqual([])

  // A resource the target creates itself gets an id past the imported ones.
  const maxImported = Math.max(...[...after.keys()].map((k) => Number(k.split('/')[1])).filter(Number.isFinite))
  const created = await readJson(await target.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true }, key: ADMIN_KEY }))
  expect(Number(created.id)).toBeGreaterThan(maxImported)
}, 300_000)
