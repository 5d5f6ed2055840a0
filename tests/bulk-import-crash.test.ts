// A worker killed (SIGKILL) in the middle of an $import file, in the cluster form (API and workers as
// separate processes): a new worker takes the stalled job over and resumes from the last committed batch
// (asking the origin for the rest of the file with Range), so every resource of the Synthea sample is
// stored exactly once, at version 1, and the job counts every line once.
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { writeSyntheaNdjson } from '../bench/synthea-ndjson'
import { ADMIN_KEY } from './harness'
import { importBody, startNdjsonOrigin } from './ndjson-origin'
import { useProcessCluster } from './process-cluster'

const origin = startNdjsonOrigin()
process.env.BULK_IMPORT_ORIGINS = origin.origin // the cluster's processes take this environment
process.env.OUTBOUND_ALLOW = '127.0.0.1' // the outbound client reaches the loopback origin
const cluster = useProcessCluster('bulk_import_crash')
const dir = mkdtempSync(join(tmpdir(), 'bulk-crash-'))
afterAll(() => {
  origin.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('a worker killed mid-file: a new worker resumes from the checkpoint, every resource stored once', async () => {
  const set = await writeSyntheaNdjson(1, dir)
  const text = set.files.map((f) => readFileSync(f.path, 'utf8')).join('')
  const url = origin.put('/synthea.ndjson', text)
  const first = cluster.spawn('workers/main.ts')
  const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/fhir+json', prefer: 'respond-async' }
  const body = importBody([{ type: 'Patient', url }], [{ name: 'storageDetail', part: [{ name: 'maxBatchResourceCount', valueString: '100' }] }])
  const res = await fetch(`${cluster.base}/fhir/$import`, { method: 'POST', headers, body: JSON.stringify(body) })
  expect(res.status).toBe(202)
  const statusUrl = res.headers.get('content-location') as string
  const id = new URL(statusUrl).searchParams.get('_jobId')

  let atKill: any
  for (const started = Date.now(); Date.now() - started < 90_000; await Bun.sleep(5)) {
    const [row] = await cluster.sql`select processed::int, state from admin_job where id = ${id}`
    if (row && row.state !== 'running' && row.state !== 'queued') throw new Error(`job ${row.state} before the kill`)
    if (row && row.processed >= 1000) {
      first.kill('SIGKILL')
      await first.exited
      atKill = row
      break
    }
  }
  expect(atKill).toBeDefined()
  expect(atKill.processed).toBeLessThan(set.resources)

  cluster.spawn('workers/main.ts')
  let status: Response | undefined
  for (const started = Date.now(); Date.now() - started < 120_000; await Bun.sleep(250)) {
    const r = await fetch(statusUrl, { headers })
    if (r.status !== 202) {
      status = r
      break
    }
    await r.arrayBuffer()
  }
  expect(status?.status).toBe(200)
  const manifest: any = await status?.json()
  expect(manifest.output[0]).toMatchObject({ count: set.resources, created: set.resources, updated: 0, unchanged: 0 })
  expect(manifest.error).toEqual([])
  const [{ n, versions }] = await cluster.sql<{ n: number; versions: number }[]>`select count(*)::int as n, max(version)::int as versions from resource`
  expect(n).toBe(set.resources)
  expect(versions).toBe(1)
  const [{ h }] = await cluster.sql<{ h: number }[]>`select count(*)::int as h from resource_history`
  expect(h).toBe(0)
  const ranges = origin.requests.filter((r) => r.path === '/synthea.ndjson').map((r) => r.range)
  expect(ranges[0]).toBeNull()
  expect(ranges[ranges.length - 1]).toMatch(/^bytes=[1-9]\d*-$/)
}, 240_000)
