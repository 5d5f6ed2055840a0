// A worker killed (SIGKILL) in the middle of an $import file, in the cluster form (API and workers as
// separate processes): a new worker takes the stalled job over and resumes from the last committed batch
// (asking the origin for the rest of the file with Range), so every resource of the Synthea sample is
// stored exactly once, at version 1, and the job counts every line once. The same with the file in four
// inputs and the kill just after the second input started committing: batches of one input are still
// being written while the next is read (import-pipeline.ts), and the resumed job skips no line of either.
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

const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/fhir+json', prefer: 'respond-async' }

/** Imports `inputs` in batches of 100, kills the worker once `killAt` lines are committed, lets a new
 *  worker finish; the manifest. Every resource is then stored once, at version 1. */
async function importKilled(inputs: { type: string; url: string }[], resources: number, killAt: number): Promise<any> {
  await cluster.sql`truncate resource, resource_history, resource_count cascade`
  const first = cluster.spawn('workers/main.ts')
  const body = importBody(inputs, [{ name: 'storageDetail', part: [{ name: 'maxBatchResourceCount', valueString: '100' }] }])
  const res = await fetch(`${cluster.base}/fhir/$import`, { method: 'POST', headers, body: JSON.stringify(body) })
  expect(res.status).toBe(202)
  const statusUrl = res.headers.get('content-location') as string
  const id = new URL(statusUrl).searchParams.get('_jobId')

  let atKill: any
  for (const started = Date.now(); Date.now() - started < 90_000; await Bun.sleep(5)) {
    const [row] = await cluster.sql`select processed::int, state from admin_job where id = ${id}`
    if (row && row.state !== 'running' && row.state !== 'queued') throw new Error(`job ${row.state} before the kill`)
    if (row && row.processed >= killAt) {
      first.kill('SIGKILL')
      await first.exited
      atKill = row
      break
    }
  }
  expect(atKill).toBeDefined()
  expect(atKill.processed).toBeLessThan(resources)

  const second = cluster.spawn('workers/main.ts')
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
  expect(manifest.error).toEqual([])
  const [{ n, versions }] = await cluster.sql<{ n: number; versions: number }[]>`select count(*)::int as n, max(version)::int as versions from resource`
  expect(n).toBe(resources)
  expect(versions).toBe(1)
  const [{ h }] = await cluster.sql<{ h: number }[]>`select count(*)::int as h from resource_history`
  expect(h).toBe(0)
  second.kill()
  await second.exited
  return manifest
}

test('a worker killed mid-file: a new worker resumes from the checkpoint, every resource stored once', async () => {
  const set = await writeSyntheaNdjson(1, dir)
  const text = set.files.map((f) => readFileSync(f.path, 'utf8')).join('')
  const url = origin.put('/synthea.ndjson', text)
  const manifest = await importKilled([{ type: 'Patient', url }], set.resources, 1000)
  expect(manifest.output[0]).toMatchObject({ count: set.resources, created: set.resources, updated: 0, unchanged: 0 })
  const ranges = origin.requests.filter((r) => r.path === '/synthea.ndjson').map((r) => r.range)
  expect(ranges[0]).toBeNull()
  expect(ranges[ranges.length - 1]).toMatch(/^bytes=[1-9]\d*-$/)
}, 240_000)

test('a worker killed as one input ends and the next begins: no line of either is skipped or written twice', async () => {
  const set = await writeSyntheaNdjson(1, dir)
  const lines = set.files.flatMap((f) =>
    readFileSync(f.path, 'utf8')
      .split('\n')
      .filter((l) => l !== ''),
  )
  const quarter = Math.ceil(lines.length / 4)
  const inputs = [0, 1, 2, 3].map((q) => ({
    type: 'Patient',
    url: origin.put(`/part-${q}.ndjson`, `${lines.slice(q * quarter, (q + 1) * quarter).join('\n')}\n`),
  }))
  const manifest = await importKilled(inputs, set.resources, quarter + 50)
  expect(manifest.output.map((o: any) => o.count)).toEqual([0, 1, 2, 3].map((q) => lines.slice(q * quarter, (q + 1) * quarter).length))
  expect(manifest.output.reduce((n: number, o: any) => n + o.created, 0)).toBe(set.resources)
}, 240_000)
