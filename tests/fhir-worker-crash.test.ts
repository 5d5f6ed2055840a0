// A worker killed (SIGKILL) in the middle of a large transaction, in the cluster form (API and worker as
// separate processes): the database holds none or all of the Bundle, never part. A new worker gets the
// stalled job (once its lock lapses and a stalled check sees it: about 10 s with the tests' settings,
// FAST_TAKEOVER; 30 to 60 s with BullMQ's defaults) and does not run it blindly again (the Bundle may be
// what killed the first, issue 19): uncommitted, the job fails with a reason the submitter reads at the
// status URL; committed, its recorded answer is given and nothing is written twice.
// https://docs.bullmq.io/guide/jobs/stalled
import { expect, test } from 'bun:test'
import { largestSyntheaBundles } from './data'
import { useProcessCluster } from './process-cluster'

const cluster = useProcessCluster('crash')
const spawn = (script: string) => cluster.spawn(script)
const fhirFetch = (path: string, init: RequestInit = {}) => cluster.fhirFetch(path, init)

async function resourceCount(): Promise<number> {
  const [{ n }] = await cluster.sql<{ n: number }[]>`select count(*)::int as n from resource`
  return n
}

/** Backends of the test database inside a transaction that has written something (a transaction id). */
async function writingBackends(): Promise<number> {
  const [{ n }] = await cluster.sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_xid is not null`
  return n
}

test('a worker killed mid-transaction leaves none or all of the Bundle; the job is not run again blindly', async () => {
  const bundle = largestSyntheaBundles(3)
  const total = bundle.entry.length
  expect(total).toBeGreaterThan(1500)
  const first = spawn('workers/main.ts')

  const res = await fhirFetch('', {
    method: 'POST',
    body: JSON.stringify(bundle),
    headers: { 'content-type': 'application/fhir+json', prefer: 'respond-async' },
  })
  expect(res.status).toBe(202)
  await res.arrayBuffer()
  const location = res.headers.get('content-location') as string
  const statusPath = location.slice(location.indexOf('/fhir/') + '/fhir'.length)

  // Kill the worker while its transaction is writing (a backend holding a transaction id); failing that,
  // once the job is seen running. Either way the database must not show part of the Bundle.
  let killedWhile: 'writing' | 'running' | undefined
  let running = 0
  let polled = 0
  for (const started = Date.now(); !killedWhile && Date.now() - started < 30_000; await Bun.sleep(2)) {
    if ((await writingBackends()) > 0) killedWhile = 'writing'
    else if (Date.now() - polled > 50) {
      polled = Date.now()
      const s = await fhirFetch(statusPath)
      const progress = s.headers.get('x-progress') ?? ''
      await s.arrayBuffer()
      expect(s.status).toBe(202) // not finished before the kill
      if (running === 0 && /^(\d+ of \d+ entries|running)$/.test(progress)) running = Date.now()
      if (running > 0 && Date.now() - running > 3000) killedWhile = 'running'
    }
  }
  expect(killedWhile).toBeDefined()
  first.kill('SIGKILL')
  await first.exited
  const killedAt = Date.now()

  // Its backend finishes the statement in hand, sees the client gone and rolls back.
  for (const started = Date.now(); (await writingBackends()) > 0 && Date.now() - started < 20_000; ) await Bun.sleep(50)
  const afterKill = await resourceCount()
  expect([0, total]).toContain(afterKill)
  const [{ n: ledger }] = await cluster.sql<{ n: number }[]>`select count(*)::int as n from bundle_job`
  expect(ledger).toBe(afterKill === 0 ? 0 : 1)

  // A new worker: the stalled job goes back to the queue; it fails (nothing was written) or answers with
  // what was committed.
  spawn('workers/main.ts')
  let done: Response | undefined
  for (const started = Date.now(); Date.now() - started < 60_000; ) {
    const s = await fhirFetch(statusPath)
    if (s.status !== 202) {
      done = s
      break
    }
    await s.arrayBuffer()
    await Bun.sleep(100)
  }
  console.log(
    `worker killed while ${killedWhile}: ${afterKill} of ${total} resources in the database; the job answered ${done?.status} ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`,
  )
  const body: any = await done?.json()
  if (afterKill === 0) {
    expect(done?.status).toBe(500)
    expect(body.resourceType).toBe('OperationOutcome')
    expect(body.issue[0].diagnostics).toContain('stopped before finishing')
    expect(body.issue[0].diagnostics).toContain('nothing was written')
    expect(await resourceCount()).toBe(0)
  } else {
    expect(done?.status).toBe(200)
    expect(body.type).toBe('transaction-response')
    expect(body.entry).toHaveLength(total)
    expect(body.entry.every((e: any) => e.response.status === '201 Created')).toBe(true)
    expect(await resourceCount()).toBe(total)
    const [{ n: distinct }] = await cluster.sql<
      { n: number }[]
    >`select count(distinct content::jsonb -> 'identifier')::int as n from resource where res_type = 'Patient'`
    expect(distinct).toBe(3)
  }
  const [{ n: jobs }] = await cluster.sql<{ n: number }[]>`select count(*)::int as n from bundle_job`
  expect(jobs).toBe(afterKill === 0 ? 0 : 1)
}, 120_000)
