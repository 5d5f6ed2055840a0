// $import of large NDJSON lines (issue 19, memory): a line of LARGE_LINE_CHARS or more is a batch of its
// own, and one of ALONE_CHARS or more is prepared and written with no other batch in flight
// (ImportPipeline.commit), so that a worker holds one such line at a time whatever the number of them
// (bench/import-large-lines.ts). The pipeline's order is checked on a repository of a fresh database
// (its preparation and transactions observed, the writes real); the import itself over HTTP, large lines
// among small ones, bad ones and the same resource on a small and a large line, and text whose COPY is
// sent in slices (a character outside the BMP never cut in two).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readImportLine } from '../shared/bulk/import-batch'
import { LARGE_LINE_CHARS } from '../shared/bulk/import-job'
import { ALONE_CHARS, ImportPipeline } from '../shared/bulk/import-pipeline'
import { loadConfig } from '../shared/config'
import { createSql, type Sql } from '../shared/db/client'
import type { Repo } from '../shared/fhir/repo/repo'
import { createRepo } from '../shared/fhir/store'
import { kickOff, manifestOf, readNdjson } from './bulk-http'
import { readJson, useTestServer } from './harness'
import { importBody, ndjson, startNdjsonOrigin } from './ndjson-origin'
import { createMigratedDatabase, databaseUrl, dropDatabase } from './test-database'

const patient = (id: string, family: string) => ({ resourceType: 'Patient', id, name: [{ family }] })
const binary = (id: string, data: string) => ({ resourceType: 'Binary', id, contentType: 'application/octet-stream', data })
/** Base64 text of `chars` characters, its first four naming the line. */
const base64 = (tag: string, chars: number) => `${tag.padEnd(4, 'A').slice(0, 4)}${'QUFB'.repeat(Math.ceil(chars / 4))}`.slice(0, chars)
const LARGE = LARGE_LINE_CHARS + 1000
const ALONE = ALONE_CHARS + 1000

describe('ImportPipeline: a batch committed alone', () => {
  const name = `test_import_alone_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
  let sql: Sql
  let repo: Repo
  beforeAll(async () => {
    await createMigratedDatabase(name)
    sql = createSql(databaseUrl(name), { max: 5 })
    repo = await createRepo(sql, loadConfig({ DATABASE_URL: databaseUrl(name) }))
  })
  afterAll(async () => {
    await sql.end()
    await dropDatabase(name)
  })

  test('is prepared once every batch before it has committed, and has committed before the next is prepared', async () => {
    // The repository's work observed: each preparation with the transactions open when it starts, each
    // transaction's start with the others open then. A batch's key is its first resource's id.
    const events: string[] = []
    const open = new Set<string>()
    let preparingLarge: () => void = () => {}
    const largePrepared = new Promise<void>((resolve) => {
      preparingLarge = resolve
    })
    const prepareCopy = repo.prepareCopy.bind(repo)
    repo.prepareCopy = (versions) => {
      const batch = versions[0].id
      events.push(`prepare ${batch} while ${[...open].join(',') || 'none'} open`)
      if (batch === 'large') preparingLarge()
      return prepareCopy(versions)
    }
    const transaction = repo.transaction.bind(repo)
    repo.transaction = ((fn: any, opts: any) => {
      let batch = '?'
      return transaction(async (w) => {
        const lock = w.lock.bind(w)
        w.lock = (keys) => {
          batch = keys[0].id
          events.push(`write ${batch} while ${[...open].join(',') || 'none'} open`)
          open.add(batch)
          return lock(keys)
        }
        return fn(w)
      }, opts).finally(() => open.delete(batch))
    }) as Repo['transaction']

    const pipeline = new ImportPipeline(repo)
    const line = (resource: unknown, n: number) => readImportLine({ number: n, end: 0, text: JSON.stringify(resource) })
    // The first batch holds its transaction until the large batch's preparation starts, or 3 s: a large
    // batch prepared while it is in flight is seen doing so, whatever the machine's speed.
    await pipeline.commit([line(patient('first', 'First'), 1)], async () => {
      await Promise.race([largePrepared, Bun.sleep(3000)])
    })
    await pipeline.commit([line(patient('second', 'Second'), 2)], async () => {})
    await pipeline.commit([line(binary('large', base64('L', ALONE)), 3)], async () => {}, { chars: ALONE + 100, large: true })
    const afterLarge = [...open]
    await pipeline.commit([line(patient('after', 'After'), 4)], async () => {})
    await pipeline.drain()

    expect(events).toContain('prepare large while none open')
    expect(events).toContain('write large while none open')
    // The batch before it was in flight with the first (the pipeline's depth for small batches).
    expect(events.indexOf('prepare large while none open')).toBeGreaterThan(events.indexOf('write second while first open'))
    expect(afterLarge).toEqual([]) // committed when its commit resolves
    expect(events).toContain('prepare after while none open')
    const stored = await sql<{ id: string; n: number }[]>`select id, length(content::jsonb->>'data') as n from resource order by id`
    expect(stored.map((r) => r.id)).toEqual(['after', 'first', 'large', 'second'])
    expect(stored.find((r) => r.id === 'large')?.n).toBe(ALONE)
  }, 60_000)
})

describe('$import of large lines among small ones', () => {
  const origin = startNdjsonOrigin()
  const s = useTestServer({ BULK_IMPORT_ORIGINS: origin.origin, OUTBOUND_ALLOW: '127.0.0.1' })
  afterAll(() => origin.stop())

  test('every line is imported, in line order, bad large lines reported by their number', async () => {
    // U+1F600 is two UTF-16 units: in two runs of it an odd number of characters apart, the COPY text's
    // slices of CHUNK_CHARS (an even number) would cut one pair in two somewhere unless kept whole.
    const smile = '\u{1F600}'.repeat(Math.ceil(LARGE / 2))
    const smiles = `${smile}y${smile}`
    const lines: unknown[] = []
    for (let i = 0; i < 30; i++) lines.push(patient(`small-${i}`, `Small ${i}`))
    lines.push(patient('twice', 'Small first')) // 31: then the same resource on a large line (32)
    lines.push(patient('twice', `Large ${'z'.repeat(LARGE)}`))
    lines.push(binary('large-1', base64('B1', LARGE))) // 33
    lines.push(binary('large-2', base64('B2', ALONE))) // 34: written alone
    lines.push({ resourceType: 'Binary', id: 'large-bad', contentType: 'x', data: base64('B3', LARGE), unknownElement: true }) // 35
    for (let i = 30; i < 60; i++) lines.push(patient(`small-${i}`, `Small ${i}`)) // 36-65
    lines.push({ resourceType: 'Observation', id: 'smiles', status: 'final', code: { text: 'smiles' }, valueString: smiles }) // 66
    // 67, the last: large and not JSON (no newline after it).
    const text = `${ndjson(lines)}{"resourceType":"Binary","id":"cut-short","data":"${base64('B4', LARGE)}`
    const url = origin.put('/mixed.ndjson', text)
    const m = await manifestOf(await kickOff(s, '/$import', { method: 'POST', json: importBody([{ type: 'Patient', url }]) }))

    expect(m.output[0]).toMatchObject({ created: 64, updated: 1 })
    const errors = (await readNdjson(m.error[0].url)).map((o) => o.issue[0].location[0])
    expect(errors).toEqual(['Line[35]', 'Line[67]'])
    for (const id of ['small-0', 'small-29', 'small-30', 'small-59']) expect((await s.fhirFetch(`/Patient/${id}`)).status).toBe(200)
    const twice = await readJson(await s.fhirFetch('/Patient/twice'))
    expect(twice.meta.versionId).toBe('2')
    expect(twice.name[0].family).toStartWith('Large ')
    for (const [id, tag, chars] of [
      ['large-1', 'B1', LARGE],
      ['large-2', 'B2', ALONE],
    ] as const) {
      const read = await readJson(await s.fhirFetch(`/Binary/${id}`))
      expect(read.data).toBe(base64(tag, chars))
    }
    expect((await s.fhirFetch('/Binary/large-bad')).status).toBe(404)
    expect((await readJson(await s.fhirFetch('/Observation/smiles'))).valueString).toBe(smiles)
    // The search indexes of the large lines were written with them.
    const found = await readJson(await s.fhirFetch('/Patient?family=Large'))
    expect(found.entry.map((e: any) => e.resource.id)).toEqual(['twice'])
  }, 120_000)
})
