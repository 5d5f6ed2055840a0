// $export of large resources: a file is written in chunks of about BULK's flush size (8 MB) however large
// the resources and however many of them one page reads, so that serving a file (which reads one chunk at a
// time) holds a chunk, not everything a page held. Files in PostgreSQL (the cluster default).
import { beforeAll, expect, test } from 'bun:test'
import { exportedByType, kickOff, manifestOf } from './bulk-http'
import { useTestServer } from './harness'

const s = useTestServer()
const MB = 1024 * 1024
const DOCS = 5

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
