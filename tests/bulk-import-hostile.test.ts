// $import of inputs a careful or hostile client sends: files with many bad lines, the same resource on
// several lines, numeric ids the server could never have assigned, inputs past the size limit. Each is
// imported from a local origin on the allow-list; files in PostgreSQL (the cluster default).
import { afterAll, describe, expect, test } from 'bun:test'
import { kickOff, manifestOf, readNdjson } from './bulk-http'
import { useTestServer } from './harness'
import { importBody, ndjson, startNdjsonOrigin } from './ndjson-origin'

const origin = startNdjsonOrigin()
const s = useTestServer({ BULK_IMPORT_ORIGINS: origin.origin, OUTBOUND_ALLOW: '127.0.0.1' })
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
