// A transaction job runs at most once: the processor a worker runs, given the same job id again (a job
// retried after its worker died between the commit and BullMQ's completion), answers with the results
// recorded by the first run and writes nothing; a different job with the same Bundle writes again.
import { describe, expect, test } from 'bun:test'
import { createRepo } from '../shared/fhir/store'
import { transactionProcessor } from '../workers/transaction'
import { patient, post, transaction, unique, uuid } from './bundle-http'
import { useTestServer } from './harness'

const s = useTestServer()

async function counts(): Promise<{ resources: number; jobs: number }> {
  const [r] = await s.sql<{ resources: number; jobs: number }[]>`
    select (select count(*) from resource)::int as resources, (select count(*) from bundle_job)::int as jobs`
  return r
}

describe('transaction job retried', () => {
  test('the same job id: the first results, nothing written again; another job id writes', async () => {
    const repo = await createRepo(s.sql, s.config)
    const run = transactionProcessor(repo, s.config, 'test-secret')
    const body = JSON.stringify(transaction([post(patient(unique('retry-a')), uuid()), post(patient(unique('retry-b')), uuid())]))
    const job = (id: string) => ({ id, progress: () => {} })
    const payload = { body, baseUrl: 'http://localhost/fhir' }
    const before = await counts()
    const first = JSON.parse((await run(payload, job('retry-job-1'))) as string)
    expect(first.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '201 Created'])
    expect(await counts()).toEqual({ resources: before.resources + 2, jobs: before.jobs + 1 })
    const again = JSON.parse((await run(payload, job('retry-job-1'))) as string)
    expect(again.entry.map((e: any) => e.response)).toEqual(first.entry.map((e: any) => e.response))
    expect(await counts()).toEqual({ resources: before.resources + 2, jobs: before.jobs + 1 })
    const other = JSON.parse((await run(payload, job('retry-job-2'))) as string)
    expect(other.entry[0].response.location).not.toBe(first.entry[0].response.location)
    expect(await counts()).toEqual({ resources: before.resources + 4, jobs: before.jobs + 2 })
  })
})
