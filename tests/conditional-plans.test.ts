// A conditional write reads a handful of rows, not every resource of its type, on a connection whose
// plans were made while the table was small. The pool plans each statement once per connection
// (plan_cache_mode force_generic_plan); at the start of a load into a fresh database, the generic plans
// of `identifier=system|value` and of the created resource's own-URL check (`_id` and the criteria) read
// every resource of the type, so each conditional create of a batch load took longer than the last.
// Without statistics too (autovacuum may be off; a load outruns it): the planner guessed two
// Organizations, read them all in rid order and joined the identifier rows; the match is now read from
// its criterion's index rows whatever the planner knows (search/query/bounded.ts drivenFrom).
// pg_stat_xact_user_tables counts the rows the backend read from `resource` (not yet reported).
import { describe, expect, test } from 'bun:test'
import { createSql } from '../shared/db/client'
import type { FhirContext } from '../shared/fhir/request'
import { assertMatchesOwnUrl, resolveConditional } from '../shared/fhir/search/query/conditional'
import { createRepo } from '../shared/fhir/store'
import { organization, post, SYS, transaction, unique } from './bundle-http'
import { readJson, useTestServer } from './harness'

const s = useTestServer()

describe('conditional writes on plans made while the table was small', () => {
  test('the match and the own-URL check of a conditional create read a few resource rows, not all of the type', async () => {
    const sql = createSql(s.config.databaseUrl as string, { max: 1, planCacheMode: 'force_generic_plan' })
    try {
      const repo = await createRepo(sql, s.config)
      const ctx: FhirContext = { repo, config: s.config, baseUrl: 'http://localhost/fhir', secret: 'test-secret' }
      // Both statements planned on this connection while there are a few Organizations.
      const first = await s.fhirFetch('', { method: 'POST', json: transaction(Array.from({ length: 20 }, () => post(organization(unique('plan-first'))))) })
      expect(first.status).toBe(200)
      await repo.transaction(async (w) => {
        const match = await resolveConditional(w, ctx, 'Organization', `identifier=${SYS}|none-yet`)
        expect(match.matches).toEqual([])
        await expect(assertMatchesOwnUrl(w, ctx, match, 'no-such-id')).rejects.toThrow('HAPI-0929')
      })

      const values = Array.from({ length: 400 }, (_, i) => unique(`plan-org-${i}`))
      const res = await s.fhirFetch('', { method: 'POST', json: transaction(values.map((v) => post(organization(v)))) })
      expect(res.status).toBe(200)
      const target = (await readJson(res)).entry[200].response.location.split('/')[1]
      // As a load leaves the tables before any ANALYZE (the Bundle's own ANALYZE undone): no column
      // statistics, no row-count estimates. The match must be selective without them.
      await s.sql`delete from pg_statistic where starelid in (select oid from pg_class where relnamespace = 'public'::regnamespace)`
      await s.sql`update pg_class set reltuples = -1, relpages = 0 where relnamespace = 'public'::regnamespace and relkind = 'r'`

      const read = await repo.transaction(async (w) => {
        // The counts of this backend not yet reported (they may include an earlier transaction's).
        const readSoFar = async () => {
          const [row] = await w.tx<{ n: number }[]>`
            select (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int as n from pg_stat_xact_user_tables where relname = 'resource'`
          return row?.n ?? 0
        }
        const before = await readSoFar()
        const match = await resolveConditional(w, ctx, 'Organization', `identifier=${SYS}|${values[200]}`)
        expect(match.matches.map((m) => m.id)).toEqual([target])
        await assertMatchesOwnUrl(w, ctx, match, target)
        // The search's own setting is undone: the transaction's write statements keep the pool's plans.
        const [{ mode }] = await w.tx<{ mode: string }[]>`select current_setting('plan_cache_mode') as mode`
        expect(mode).toBe('force_generic_plan')
        return (await readSoFar()) - before
      })
      // A row or so for each of the two statements; 420 or more when either reads every Organization.
      expect(read).toBeLessThan(10)
    } finally {
      await sql.end()
    }
  })
})
