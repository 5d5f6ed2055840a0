// Issue 19, poison jobs: an admin job whose worker dies resumes once from its checkpoint on another worker
// (admin-reindex-crash.test); when that worker dies too, the job is not run a third time: it fails with a
// reason that /admin/jobs shows.
import { expect, test } from 'bun:test'
import { ADMIN_KEY } from './harness'
import { syntheaFiles } from './load-data'
import { useProcessCluster } from './process-cluster'

const cluster = useProcessCluster('admin_stall')
const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/fhir+json' }

async function row(id: string): Promise<{ processed: number; total: number; state: string }> {
  const [r] = await cluster.sql<{ processed: number; total: number; state: string }[]>`select processed::int, total::int, state from admin_job where id = ${id}`
  return r
}

/** Kills `worker` once the job has processed more than `after`; false when the job ended first. */
async function killWhenPast(worker: ReturnType<typeof cluster.spawn>, id: string, after: number): Promise<boolean> {
  for (const started = Date.now(); Date.now() - started < 60_000; await Bun.sleep(5)) {
    const r = await row(id)
    if (r.state !== 'running' && r.state !== 'queued') return false
    if (r.processed > after) {
      worker.kill('SIGKILL')
      await worker.exited
      return true
    }
  }
  return false
}

test('an admin job whose worker died twice fails with its reason in /admin/jobs', async () => {
  const first = cluster.spawn('workers/main.ts')
  for (const file of syntheaFiles(12)) {
    const res = await fetch(`${cluster.base}/fhir`, { method: 'POST', headers, body: await Bun.file(file).text() })
    expect(res.status).toBe(200)
    await res.arrayBuffer()
  }
  const res = await fetch(`${cluster.base}/fhir/$reindex`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'batchSize', valueInteger: 20 }] }),
  })
  expect(res.status).toBe(200)
  const id = ((await res.json()) as any).parameter[0].valueString

  expect(await killWhenPast(first, id, 100)).toBe(true)
  const atFirstKill = (await row(id)).processed
  const second = cluster.spawn('workers/main.ts') // takes the job over (FAST_TAKEOVER: lock 8 s) and resumes it
  expect(await killWhenPast(second, id, atFirstKill)).toBe(true)
  cluster.spawn('workers/main.ts')

  let done: any
  for (const started = Date.now(); Date.now() - started < 90_000; await Bun.sleep(200)) {
    const j = (await (await fetch(`${cluster.base}/admin/jobs/${id}`, { headers })).json()) as any
    if (j.state !== 'running' && j.state !== 'queued') {
      done = j
      break
    }
  }
  expect(done?.state).toBe('failed')
  expect(JSON.stringify(done.error)).toContain('stopped 2 times')
  expect(done.processed).toBeLessThan(done.total)
  const list = (await (await fetch(`${cluster.base}/admin/jobs?state=failed`, { headers })).json()) as any
  expect(list.data.map((j: any) => j.id)).toContain(id)
}, 240_000)
