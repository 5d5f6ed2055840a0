// $import of inputs a careful or hostile client sends: files with many bad lines, the same resource on
// several lines, numeric ids the server could never have assigned, inputs past the size limit. Each is
// imported from a local origin on the allow-list; files in PostgreSQL (the cluster default).
import { afterAll, describe, expect, test } from 'bun:test'
import { kickOff, manifestOf, readNdjson } from './bulk-http'
import { readJson, useTestServer } from './harness'
import { importBody, ndjson, startNdjsonOrigin } from './ndjson-origin'

const origin = startNdjsonOrigin()
const MAX_INPUT_BYTES = 100_000
const s = useTestServer({ BULK_IMPORT_ORIGINS: origin.origin, OUTBOUND_ALLOW: '127.0.0.1', BULK_IMPORT_MAX_INPUT_BYTES: String(MAX_INPUT_BYTES) })
afterAll(() => origin.stop())

const patient = (id: string, family: string) => ({ resourceType: 'Patient', id, name: [{ family }] })

async function importAndWait(inputs: { type: string; url: string }[], extra: unknown[] = []): Promise<any> {
  return manifestOf(await kickOff(s, '/$import', { method: 'POST', json: importBody(inputs, extra) }))
}

describe('error files', () => {
  test('every stored bad line is in the error file, in line order, past a thousand of them', async () => {
    const url = origin.put('/many-bad.ndjson', '{}\n'.repeat(2500))
    const m = await importAndWait([{ type: 'Patient', url }])
    expect(m.error).toHaveLength(1)
    expect(m.error[0].count).toBe(2500)
    const lines = (await readNdjson(m.error[0].url)).map((o) => Number(/^Line\[(\d+)\]$/.exec(o.issue[0].location[0])?.[1]))
    expect(lines).toEqual(Array.from({ length: 2500 }, (_, i) => i + 1))
  }, 60_000)
})

describe('the same resource on several lines', () => {
  test('each line is a version in line order, without waiting on itself', async () => {
    const lines = ['A', 'B', 'C', 'D'].map((family) => patient('dup-1', family))
    const url = origin.put('/dup.ndjson', ndjson([...lines, patient('dup-2', 'Other'), lines[3]]))
    const started = Date.now()
    const m = await importAndWait([{ type: 'Patient', url }])
    expect(Date.now() - started).toBeLessThan(15_000)
    expect(m.output[0]).toMatchObject({ created: 2, updated: 3, unchanged: 1 })
    const read = await readJson(await s.fhirFetch('/Patient/dup-1'))
    expect(read.name[0].family).toBe('D')
    expect(read.meta.versionId).toBe('4')
  }, 30_000)
})

describe('numeric ids', () => {
  test('one the id sequence could not go past is a bad line; the others are stored and creates go on', async () => {
    const url = origin.put(
      '/numeric.ndjson',
      ndjson([
        patient('99999999999999999999', 'Beyond bigint'),
        patient('9223372036854775807', 'At the end'),
        patient('4242', 'Numeric'),
        patient('num-a', 'A'),
      ]),
    )
    const m = await importAndWait([{ type: 'Patient', url }])
    expect(m.output[0]).toMatchObject({ created: 2 })
    const outcomes = await readNdjson(m.error[0].url)
    expect(outcomes.map((o) => o.issue[0].location[0])).toEqual(['Line[1]', 'Line[2]'])
    expect((await s.fhirFetch('/Patient/4242')).status).toBe(200)
    const created = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient' } })
    expect(created.status).toBe(201)
  }, 30_000)
})

describe('an input larger than BULK_IMPORT_MAX_INPUT_BYTES', () => {
  test('is given up, named in its failure; the import goes on with the next input', async () => {
    const big = ndjson(Array.from({ length: 2000 }, (_, i) => patient(`big-${i}`, 'Big')))
    expect(big.length).toBeGreaterThan(MAX_INPUT_BYTES)
    const bigUrl = origin.put('/big.ndjson', big)
    const smallUrl = origin.put('/small.ndjson', ndjson([patient('after-big', 'Small')]))
    const m = await importAndWait([
      { type: 'Patient', url: bigUrl },
      { type: 'Patient', url: smallUrl },
    ])
    expect(m.output[0].failure).toContain('BULK_IMPORT_MAX_INPUT_BYTES')
    expect(m.output[1]).toMatchObject({ created: 1 })
    expect(m.error.map((e: any) => e.inputUrl)).toEqual([bigUrl])
  }, 30_000)
})
