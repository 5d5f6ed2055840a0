// Bulk Data files expire: with BULK_FILE_TTL_HOURS=0 a finished export's status URL and files answer
// 404 at once, and the purge (the scheduled bulk-purge job's work) removes the files and marks the job.
import { expect, test } from 'bun:test'
import { purgeBulkFiles } from '../shared/bulk/bulk-job'
import { bulkFileStore } from '../shared/bulk/file-store'
import { kickOff, pollStatus } from './bulk-http'
import { readJson, useTestServer } from './harness'

const s = useTestServer({ BULK_FILE_TTL_HOURS: '0' })

test('an expired export answers 404 and its files are purged', async () => {
  const res = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true } })
  expect(res.status).toBe(201)
  const statusUrl = await kickOff(s, '/$export')
  const { res: final } = await pollStatus(statusUrl)
  expect(final.status).toBe(404)
  expect((await readJson(final)).issue[0].diagnostics).toContain('expired')
  const id = new URL(statusUrl).searchParams.get('_jobId') as string
  const [job] = await s.sql<{ state: string }[]>`select state from admin_job where id = ${id}`
  expect(job.state).toBe('completed')
  const chunks = async () => (await s.sql<{ n: number }[]>`select count(*)::int as n from bulk_chunk where job_id = ${id}`)[0].n
  expect(await chunks()).toBeGreaterThan(0)

  expect(await purgeBulkFiles(s.sql, bulkFileStore(s.sql, s.config), s.config.bulk.fileTtlMs)).toBe(1)
  expect(await chunks()).toBe(0)
  const [after] = await s.sql<{ result: any }[]>`select result from admin_job where id = ${id}`
  expect(after.result.purged).toBe(true)
  expect(await purgeBulkFiles(s.sql, bulkFileStore(s.sql, s.config), s.config.bulk.fileTtlMs)).toBe(0) // once
})
