// Statistics follow bulk writes (issue 23): a job that grew tables by more than half analyses them
// when it ends (shared/db/analyze.ts), so that plans are made on the data as it now is even with
// autovacuum off. A table never analysed has reltuples -1 in pg_class; ANALYZE sets it.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'bun:test'
import { dataPath } from './data'
import { useTestServer } from './harness'

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
})
