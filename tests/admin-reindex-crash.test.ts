// A worker killed (SIGKILL) in the middle of a $reindex job, in the cluster form (API and workers as
// separate processes): a new worker takes the stalled job over once its lock lapses (the tests' 8 s,
// FAST_TAKEOVER; the admin queue's own 10 s otherwise) and resumes from the last committed checkpoint, so the job finishes with exactly `total` processed (a
// redone batch would count twice, a skipped one would leave it short) and every resource indexed.
import { expect, test } from 'bun:test'
import { ADMIN_KEY } from './harness'
import { syntheaFiles } from './load-data'
import { useProcessCluster } from './process-cluster'

const cluster = useProcessCluster('reindex_crash')
const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/fhir+json' }

async function job(id: string): Promise<any> {
  return (await fetch(`${cluster.base}/admin/jobs/${id}`, { headers })).json()
}

test('a worker killed mid-reindex: a new worker resumes from the checkpoint and finishes with exact counts', async () => {
  const first = cluster.spawn('workers/main.ts')
  for (const file of syntheaFiles(12)) {
    const res = await fetch(`${cluster.base}/fhir`, { method: 'POST', headers, body: await Bun.file(file).text() })
    expect(res.status).toBe(200)
    await res.arrayBuffer()
  }

  // A custom parameter over every Observation's status: only a complete reindex makes all of them findable.
  const sp = {
    resourceType: 'SearchParameter',
    url: 'http://example.org/SearchParameter/obs-state',
    name: 'obs-state',
    status: 'active',
    code: 'obs-state',
    base: ['Observation'],
    type: 'token',
    expression: 'Observation.status',
    description: 'Observation status, again',
  }
  expect((await fetch(`${cluster.base}/fhir/SearchParameter`, { method: 'POST', headers, body: JSON.stringify(sp) })).status).toBe(201)
  const [{ n: total }] = await cluster.sql<{ n: number }[]>`select count(*)::int as n from resource where not deleted`
  expect(total).toBeGreaterThan(3000)
  const [{ n: observations }] = await cluster.sql<{ n: number }[]>`select count(*)::int as n from resource where res_type = 'Observation' and not deleted`

  const res = await fetch(`${cluster.base}/fhir/$reindex`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'batchSize', valueInteger: 50 }] }),
  })
  expect(res.status).toBe(200)
  const id = ((await res.json()) as any).parameter[0].valueString

  // Kill the worker once some batches are committed and many are left.
  let atKill: any
  for (const started = Date.now(); Date.now() - started < 60_000; await Bun.sleep(5)) {
    const [row] = await cluster.sql`select processed::int, total::int, state from admin_job where id = ${id}`
    if (row.state !== 'running' && row.state !== 'queued') throw new Error(`job ${row.state} before the kill`)
    if (row.processed >= 200) {
      first.kill('SIGKILL')
      await first.exited
      atKill = row
      break
    }
  }
  expect(atKill).toBeDefined()
  expect(atKill.processed).toBeLessThan(atKill.total)
  await Bun.sleep(300)
  const [{ processed: afterKill }] = await cluster.sql`select processed::int from admin_job where id = ${id}`
  expect(afterKill).toBeLessThan(total) // the job stopped with the worker

  cluster.spawn('workers/main.ts')
  let done: any
  for (const started = Date.now(); Date.now() - started < 90_000; await Bun.sleep(200)) {
    const j = await job(id)
    if (j.state !== 'running' && j.state !== 'queued') {
      done = j
      break
    }
  }
  expect(done).toMatchObject({ state: 'completed', total, processed: total, result: { reindexed: total } })
  const search = await fetch(
    `${cluster.base}/fhir/Observation?obs-state=final,amended,preliminary,registered,corrected,cancelled,entered-in-error,unknown&_summary=count&_total=accurate`,
    { headers },
  )
  expect(((await search.json()) as any).total).toBe(observations)
}, 180_000)
