// The embedded form's job queue (in-process.ts over local_job), against real PostgreSQL: a process that
// stops is played by a queue dropped without finishing its jobs, the next start by a new queue on the same
// database resuming them. A delayed job (a webhook retry) survives the stop and runs once, when due; a
// job cut once runs again as a restart, cut twice with a stall; a job still waiting its turn when the
// process stopped was never begun and runs as new.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Type } from '@sinclair/typebox'
import { createSql, ensureDatabase, type Sql } from '../db/client'
import { migrate } from '../db/migrate'
import { defineJob } from './definition'
import { type InProcessJob, inProcessJobs } from './in-process'
import { LocalJobStore } from './local-job-store'

const Job = defineJob('in-process-test', Type.Object({ n: Type.Integer() }))
const base = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres')
base.pathname = `/test_inproc_${Date.now().toString(36)}`
let sql: Sql

beforeAll(async () => {
  await ensureDatabase(base.toString())
  sql = createSql(base.toString(), { max: 3 })
  await migrate(sql)
}, 60_000)

afterAll(async () => {
  await sql?.end()
  const admin = createSql(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', { max: 1 })
  await admin`drop database if exists ${admin(base.pathname.slice(1))} with (force)`
  await admin.end()
})

/** A queue whose runner records each run and holds it until released (a run never released is "cut"). */
function queue(concurrency = 1) {
  const runs: { n: number; job: InProcessJob; at: number; release: () => void }[] = []
  const jobs = inProcessJobs(
    (_def, data, job) =>
      new Promise((resolve) => {
        const n = (data as { n: number }).n
        runs.push({ n, job, at: Date.now(), release: () => resolve({ done: n }) })
      }),
    new LocalJobStore(sql),
    () => concurrency,
  )
  return { jobs, runs }
}

// Bounds for a loaded machine: a wait ends as soon as its condition holds.
const until = async (ok: () => boolean, ms = 15_000) => {
  for (const end = Date.now() + ms; !ok(); await Bun.sleep(10)) if (Date.now() > end) throw new Error('timed out')
}
const completed = async (jobs: ReturnType<typeof queue>['jobs'], id: string, ms = 15_000) => {
  for (const end = Date.now() + ms; (await jobs.status(Job, id))?.state !== 'completed' && Date.now() < end; ) await Bun.sleep(20)
}

test('a delayed job survives a stop: the next start runs it once, when it is due', async () => {
  const first = queue()
  const enqueued = Date.now()
  const id = await first.jobs.enqueue(Job, { n: 1 }, { delayMs: 1000 })
  await first.jobs.close() // stopped before it was due
  const second = queue()
  expect(await second.jobs.resume([Job])).toBe(1)
  await until(() => second.runs.length === 1)
  // Not before it was due, however long the stop and the start took (checking that it had not run 100 ms
  // after the start failed once they took 300 ms of a 400 ms delay). 2 ms: timers and clocks to the ms.
  expect(second.runs[0].at).toBeGreaterThanOrEqual(enqueued + 1000 - 2)
  second.runs[0].release()
  await completed(second.jobs, id)
  expect(await second.jobs.status(Job, id)).toMatchObject({ state: 'completed', result: { done: 1 } })
  expect(second.runs).toHaveLength(1)
  await second.jobs.close()
})

test('a job cut once runs again as a restart; cut twice, with a stall; one waiting its turn runs as new', async () => {
  const first = queue(1)
  const cut = await first.jobs.enqueue(Job, { n: 2 })
  const waiting = await first.jobs.enqueue(Job, { n: 3 })
  await until(() => first.runs.length === 1)
  expect(first.runs[0].job).toMatchObject({ id: cut, restarts: 0, stalls: 0 })
  expect(await first.jobs.status(Job, waiting)).toMatchObject({ state: 'queued' })
  await first.jobs.close() // the process dies with job 2 running and job 3 waiting

  const second = queue(1)
  expect(await second.jobs.resume([Job])).toBe(2)
  await until(() => second.runs.length === 1)
  expect(second.runs[0].job).toMatchObject({ id: cut, restarts: 1, stalls: 0 })
  await second.jobs.close() // and again, with job 2 running

  const third = queue(1)
  await third.jobs.resume([Job])
  await until(() => third.runs.length === 1)
  expect(third.runs[0].job).toMatchObject({ id: cut, restarts: 2, stalls: 1 })
  third.runs[0].release()
  await until(() => third.runs.length === 2)
  // Job 3 never began before: a first run.
  expect(third.runs[1].job).toMatchObject({ id: waiting, restarts: 0, stalls: 0 })
  third.runs[1].release()
  await completed(third.jobs, waiting)
  expect(await third.jobs.status(Job, cut)).toMatchObject({ state: 'completed', result: { done: 2 } })
  expect(await third.jobs.status(Job, waiting)).toMatchObject({ state: 'completed', result: { done: 3 } })
  await third.jobs.close()
})
