// Statistics follow bulk writes (issue 23): a job that grew tables by more than half analyses them
// when it ends (shared/db/analyze.ts), so that plans are made on the data as it now is even with
// autovacuum off. A table never analysed has reltuples -1 in pg_class; ANALYZE sets it. Visibility too:
// the tables are vacuumed, which marks their pages all-visible (pg_class.relallvisible) for index-only scans.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'bun:test'
import { dataPath } from './data'
import { ADMIN_KEY, useTestServer } from './harness'

const s = useTestServer()

const estimates = async (tables: string[]) =>
  Object.fromEntries(
    (await s.sql<{ name: string; n: number }[]>`select relname as name, reltuples::float8 as n from pg_class where relname = any(${tables}::text[])`).map(
      (r) => [r.name, r.n],
    ),
  )

describe('ANALYZE after a job that grew the tables', () => {
  test('a transaction Bundle of a Synthea patient leaves the tables it filled analysed', async () => {
    const dir = dataPath('synthea-smart')
    const file = readdirSync(dir).find((f) => f.endsWith('.json')) as string
    const bundle = JSON.parse(readFileSync(join(dir, file), 'utf8'))
    // (idx_date grows by 5 pages here: under the 8 worth an ANALYZE)
    const tables = ['resource', 'idx_token', 'idx_reference']
    expect(Object.values(await estimates(tables)).every((n) => n <= 0)).toBe(true) // never analysed
    const res = await s.fhirFetch('', { method: 'POST', json: bundle })
    expect(res.status).toBe(200)
    // After the answer: the Bundles of a load share one ANALYZE, a few seconds after the first ends.
    let after = await estimates(tables)
    for (const until = Date.now() + 20_000; Date.now() < until && !tables.every((t) => after[t] > 0); await Bun.sleep(200)) after = await estimates(tables)
    const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from idx_token`
    expect(n).toBeGreaterThan(1000)
    for (const t of tables) expect(after[t]).toBeGreaterThan(0)
    expect(after.idx_token).toBe(n)
  })

  test('a $reindex, a large job, leaves the tables it grew vacuumed: their pages all-visible', async () => {
    const tables = ['idx_token', 'idx_reference']
    const visible = async () =>
      Object.fromEntries(
        (await s.sql<{ name: string; n: number }[]>`select relname as name, relallvisible::int as n from pg_class where relname = any(${tables}::text[])`).map(
          (r) => [r.name, r.n],
        ),
      )
    expect(Object.values(await visible()).every((n) => n === 0)).toBe(true) // written, never vacuumed
    const res = await s.fhirFetch('/$reindex', { method: 'POST', key: ADMIN_KEY, json: { resourceType: 'Parameters' } })
    expect(res.status).toBe(200)
    const id = ((await res.json()) as any).parameter.find((p: any) => p.name === 'jobId').valueString
    let after = await visible()
    for (const until = Date.now() + 30_000; Date.now() < until && !tables.every((t) => after[t] > 0); await Bun.sleep(200)) after = await visible()
    const job = (await (await fetch(`${s.base}/admin/jobs/${id}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).json()) as any
    expect(job.state).toBe('completed')
    for (const t of tables) expect(after[t]).toBeGreaterThan(0)
  })
})
