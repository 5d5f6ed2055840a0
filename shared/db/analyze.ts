// Statistics and visibility that follow bulk writes. Autovacuum may be off (it is on the project's
// machines) or late behind a bulk load, and PostgreSQL then plans on what it knew before the load
// (nothing, for tables filled since they were created), and reads the heap for every row an index-only
// scan returns (no page is marked all-visible until a VACUUM). A job that writes many rows (a
// transaction Bundle, $reindex, a bulk import, the reindexing pass) calls this when it ends: each table
// that grew by more than half since its statistics were taken (pages now against pg_class.relpages,
// which ANALYZE and VACUUM set; the cumulative counters would lag: a backend reports its writes up to
// seconds later) is analysed, and after the large jobs vacuumed. Search does not depend on it to stay
// fast (shared/fhir/search/query/bounded.ts); its plans read less with it.
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

/**
 * The tables of the schema that were analysed (with `vacuum`, vacuumed and analysed); never throws
 * (statistics are an optimisation). VACUUM marks the pages all-visible, so that index-only scans read no
 * heap: on Synthea x10 a sparse negation (`Observation?status:not=final`, the resources of the type
 * except those with the code) read 23,300 buffers as loaded and 10,100 after a VACUUM, of which the
 * type's rids 557 instead of 13,500 (bench/search-explain.ts). It reads every page of the table: for the
 * jobs that end rarely (an import, a reindex, an expunge), not after transaction Bundles (coalesced, a
 * Synthea load vacuumed each table 6-7 times: PostgreSQL 139 -> 532-819 µs per ingested resource,
 * bench/ingest.ts --smart-only). VACUUM runs outside a transaction: one connection of the pool, a
 * session advisory lock.
 */
export async function analyzeGrownTables(sql: Sql, opts: { neverAnalysedOnly?: boolean; vacuum?: boolean } = {}): Promise<string[]> {
  let conn: Awaited<ReturnType<Sql['reserve']>> | undefined
  try {
    conn = await sql.reserve()
    const [{ locked }] = await conn`select pg_try_advisory_lock(${ANALYZE_LOCK}) as locked`
    if (!locked) return []
    try {
      const grown = await conn<{ name: string }[]>`
        select c.relname as name from pg_class c
        where c.relnamespace = current_schema()::regnamespace and c.relkind = 'r'
          and pg_relation_size(c.oid) / current_setting('block_size')::int > c.relpages * ${GROWTH}::float8 + ${MIN_PAGES}
          and (${!opts.neverAnalysedOnly}::boolean or c.reltuples < 0)
        order by c.relname`
      for (const t of grown) await (opts.vacuum ? conn`vacuum (analyze) ${conn(t.name)}` : conn`analyze ${conn(t.name)}`)
      return grown.map((t) => t.name)
    } finally {
      await conn`select pg_advisory_unlock(${ANALYZE_LOCK})`
    }
  } catch (err) {
    log.warn('analyze after a bulk write failed', { err: (err as Error).message })
    return []
  } finally {
    conn?.release()
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
