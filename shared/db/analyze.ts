// Statistics that follow bulk writes. Autovacuum may be off (it is on the project's machines) or late
// behind a bulk load, and PostgreSQL then plans on what it knew before the load (nothing, for tables
// filled since they were created). A job that writes many rows (a transaction Bundle, $reindex, a bulk
// import, the reindexing pass) calls this when it ends: each table that grew by more than half since
// its statistics were taken (pages now against pg_class.relpages, which ANALYZE and VACUUM set; the
// cumulative counters would lag: a backend reports its writes up to seconds later) is analysed. Search
// does not depend on it to stay fast (shared/fhir/search/query/bounded.ts); other plans do better with it.
import type { Sql } from './client'
import { log } from '../log'

/**
 * How long a frequent small job's request waits, so that the requests of a load coalesce into one run.
 * Inline, a load of Synthea's 47 Bundles into an empty database ran ANALYZE 6 to 7 times per table and
 * cost PostgreSQL about 40 µs per ingested resource (93 -> 130 µs); coalesced, once or twice.
 */
const COALESCE_MS = 3_000

/** Growth below this many pages (64 kB) is not worth an ANALYZE. */
const MIN_PAGES = 8
/**
 * A table is analysed again once it is this much larger than when its statistics were taken: a load of
 * Synthea's 47 Bundles into an empty database analysed each table 13 times at a tenth (PostgreSQL's
 * autovacuum default), about a sixth of the load's PostgreSQL time; at a half, 6 to 7 times.
 */
const GROWTH = 1.5
/** One job at a time analyses; the others skip (the tables they grew are analysed by that one or the next). */
const ANALYZE_LOCK = 0x616e_616c // "anal"

/** The tables of the schema that were analysed; never throws (statistics are an optimisation). */
export async function analyzeGrownTables(sql: Sql, opts: { neverAnalysedOnly?: boolean } = {}): Promise<string[]> {
  try {
    return await sql.begin(async (tx) => {
      const [{ locked }] = await tx`select pg_try_advisory_xact_lock(${ANALYZE_LOCK}) as locked`
      if (!locked) return []
      const grown = await tx<{ name: string }[]>`
        select c.relname as name from pg_class c
        where c.relnamespace = current_schema()::regnamespace and c.relkind = 'r'
          and pg_relation_size(c.oid) / current_setting('block_size')::int > c.relpages * ${GROWTH}::float8 + ${MIN_PAGES}
          and (${!opts.neverAnalysedOnly}::boolean or c.reltuples < 0)
        order by c.relname`
      for (const t of grown) await tx`analyze ${tx(t.name)}`
      return grown.map((t) => t.name)
    })
  } catch (err) {
    log.warn('analyze after a bulk write failed', { err: (err as Error).message })
    return []
  }
}

const scheduled = new WeakMap<Sql, { timer?: ReturnType<typeof setTimeout>; running: boolean; again: boolean }>()

/**
 * After a transaction Bundle: a grown table that was never analysed is analysed at once (with no
 * statistics at all the planner's guesses are at their worst, and an ANALYZE also makes every connection
 * plan its cached statements again: tests/conditional-plans.test.ts); the others with analyzeSoon.
 */
export async function analyzeAfterBundle(sql: Sql): Promise<void> {
  await analyzeGrownTables(sql, { neverAnalysedOnly: true })
  analyzeSoon(sql)
}

/**
 * For jobs that end often and write a little each (transaction Bundles): analyzeGrownTables COALESCE_MS
 * after the first request, the requests in between joining it (one more run follows when some came
 * while it ran). Never delays the job; the timer does not keep the process alive.
 */
export function analyzeSoon(sql: Sql): void {
  let s = scheduled.get(sql)
  if (!s) scheduled.set(sql, (s = { running: false, again: false }))
  if (s.running) {
    s.again = true
    return
  }
  if (s.timer) return
  const state = s
  state.timer = setTimeout(async () => {
    state.timer = undefined
    state.running = true
    try {
      await analyzeGrownTables(sql)
    } finally {
      state.running = false
      if (state.again) {
        state.again = false
        analyzeSoon(sql)
      }
    }
  }, COALESCE_MS)
  state.timer.unref?.()
}
