// $export of large resources: a file is written in chunks of about BULK's flush size (8 MB) however large
// the resources and however many of them one page reads, so that serving a file (which reads one chunk at a
// time) holds a chunk, not everything a page held. Files in PostgreSQL (the cluster default). A page is
// cut by the bytes of its rows as well as by their count (PAGE_BYTES, 16 MB): seven resources of 3 MB
// are read in two pages. A row larger than LARGE_ROW_BYTES is never read whole: its text is written in
// slices, a chunk each.
import { beforeAll, expect, test } from 'bun:test'
import { PAGE_BYTES } from '../shared/bulk/export-job'
import { exportScan, LARGE_ROW_BYTES } from '../shared/bulk/export-scan'
import { SETTLE_MS } from '../shared/bulk/export-settle'
import { exportedByType, kickOff, manifestOf } from './bulk-http'
import { useTestServer } from './harness'

const s = useTestServer()
const MB = 1024 * 1024
const DOCS = 7

beforeAll(async () => {
  for (let i = 0; i < DOCS; i++) {
    const doc = {
      resourceType: 'DocumentReference',
      id: `large-${i}`,
      status: 'current',
      content: [{ attachment: { contentType: 'text/plain', data: 'QUFB'.repeat((3 * MB) / 4) } }],
    }
    const res = await s.fhirFetch(`/DocumentReference/${doc.id}`, { method: 'PUT', json: doc })
    expect(res.status).toBe(201)
  }
}, 60_000)

test('a page of large resources is written in chunks of about 8 MB, and the file holds each resource once', async () => {
  const statusUrl = await kickOff(s, '/$export?_type=DocumentReference')
  const manifest = await manifestOf(statusUrl)
  const jobId = new URL(statusUrl).searchParams.get('_jobId')
  const chunks = await s.sql<{ bytes: number }[]>`select octet_length(data) as bytes from bulk_chunk where job_id = ${jobId} order by file_id, n`
  expect(chunks.length).toBeGreaterThan(1)
  for (const c of chunks) expect(c.bytes).toBeLessThan(8 * MB + 3.1 * MB) // the flush size and one resource
  const docs = (await exportedByType(manifest)).get('DocumentReference') ?? []
  expect(docs.map((d) => d.id).sort()).toEqual(Array.from({ length: DOCS }, (_, i) => `large-${i}`))
}, 60_000)

test('a page stops at its byte budget, the row that reaches it included, and says more rows may follow', async () => {
  const [{ now }] = await s.sql<{ now: string }[]>`select now()::text as now`
  const scan = await exportScan(s.sql, { level: 'system', typeFilters: [] }, ['DocumentReference'], now, 'http://localhost/fhir')
  // 3 MB of text each: the first two rows start under 4 MB, the third at 6 MB.
  const first = await scan.page('0', 2000, 4 * MB)
  expect(first.rows.map((r) => r.id)).toEqual(['large-0', 'large-1'])
  expect(first.more).toBe(true)
  // A budget under one row still reads that row.
  const one = await scan.page(first.rows[1].rid, 2000, 1)
  expect(one.rows.map((r) => r.id)).toEqual(['large-2'])
  expect(one.more).toBe(true)
  // Cut by count; then the last page, under both bounds.
  const counted = await scan.page(one.rows[0].rid, 2, PAGE_BYTES)
  expect(counted.rows.map((r) => r.id)).toEqual(['large-3', 'large-4'])
  expect(counted.more).toBe(true)
  const last = await scan.page(counted.rows[1].rid, 2000, PAGE_BYTES)
  expect(last.rows.map((r) => r.id)).toEqual(['large-5', 'large-6'])
  expect(last.more).toBe(false)
  expect(last.rows[0].content?.length).toBeGreaterThan(3 * MB)
})

test('a row over LARGE_ROW_BYTES is written in slices of its stored text, each a chunk, and reads back whole', async () => {
  // Groups of five UTF-8 bytes (an ASCII letter, then an astral character of four): the slices end at
  // 4, 8 and 12 MB, three different places in a group, so at least one of them cuts the astral character.
  const text = 'a\u{1F600}'.repeat(2.5 * MB)
  const big = { resourceType: 'Observation', id: 'big', status: 'final', code: { text: 'big' }, valueString: text }
  expect((await s.fhirFetch('/Observation/big', { method: 'PUT', json: big })).status).toBe(201)
  const stored = (await (await s.fhirFetch('/Observation/big')).json()) as any
  const [{ now }] = await s.sql<{ now: string }[]>`select now()::text as now`
  const scan = await exportScan(s.sql, { level: 'system', typeFilters: [] }, ['Observation'], now, 'http://localhost/fhir')
  const page = await scan.page('0', 2000, PAGE_BYTES)
  expect(page.rows.map((r) => [r.id, r.content, r.size > LARGE_ROW_BYTES])).toEqual([['big', null, true]])

  // Written more than SETTLE_MS before the kick-off: not a late row, whose chunks the job writes again
  // once transactionTime has settled, from the row read whole.
  await Bun.sleep(SETTLE_MS + 200)
  const statusUrl = await kickOff(s, '/$export?_type=Observation')
  const manifest = await manifestOf(statusUrl)
  const jobId = new URL(statusUrl).searchParams.get('_jobId')
  const chunks = await s.sql<{ bytes: number }[]>`select octet_length(data) as bytes from bulk_chunk where job_id = ${jobId} order by file_id, n`
  expect(chunks.length).toBe(4) // 12.5 MB in slices of 4 MB
  // A slice that cuts a character leaves its first bytes to the next one: that chunk is a little short.
  for (const c of chunks) expect(c.bytes).toBeLessThanOrEqual(4 * MB + 3)
  expect(chunks.slice(0, -1).some((c) => c.bytes < 4 * MB)).toBe(true)
  const [line] = (await exportedByType(manifest)).get('Observation') ?? []
  expect(line).toEqual(stored)

  // `_elements` parses the row: read whole, as before.
  const subset = await manifestOf(await kickOff(s, '/$export?_type=Observation&_elements=status'))
  const [shaped] = (await exportedByType(subset)).get('Observation') ?? []
  expect(shaped.status).toBe('final')
  expect(shaped.valueString).toBeUndefined()
}, 120_000)

test('a large row written just before the kick-off (late until transactionTime settles) is written in slices too', async () => {
  // A transaction open from before the write until after the kick-off: the export takes every row written
  // since it began as late (export-settle.ts lateFrom), and waits for it before it settles.
  let release = () => {}
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  let begun = () => {}
  const open = new Promise<void>((resolve) => {
    begun = resolve
  })
  const held = s.sql.begin(async (tx) => {
    await tx`select 1`
    begun()
    await gate
  })
  await open // the transaction has begun before the write (a fixed 50 ms assumed it had)
  const late = { resourceType: 'Observation', id: 'big-late', status: 'final', code: { text: 'late' }, valueString: 'a\u{1F600}'.repeat(2 * MB) }
  expect((await s.fhirFetch('/Observation/big-late', { method: 'PUT', json: late })).status).toBe(201)
  const stored = (await (await s.fhirFetch('/Observation/big-late')).json()) as any
  const statusUrl = await kickOff(s, '/$export?_type=Observation')
  await Bun.sleep(1500) // the job reads its page before the transaction ends
  release()
  await held
  const manifest = await manifestOf(statusUrl)
  const jobId = new URL(statusUrl).searchParams.get('_jobId')
  const chunks = await s.sql<{ bytes: number }[]>`select octet_length(data) as bytes from bulk_chunk where job_id = ${jobId} order by file_id, n`
  // Rewritten from the row read whole once settled, it was one chunk of 10 MB and empty ones.
  for (const c of chunks) expect(c.bytes).toBeLessThanOrEqual(4 * MB + 3)
  const lines = (await exportedByType(manifest)).get('Observation') ?? []
  expect(lines.map((l) => l.id).sort()).toEqual(['big', 'big-late'])
  expect(lines.find((l) => l.id === 'big-late')).toEqual(stored)
}, 120_000)
