// Statistics that follow bulk writes. Autovacuum may be off (it is on the project's machines) or late
// behind a bulk load, and PostgreSQL then plans on what it knew before the load (nothing, for tables
// filled since they were created). A job that writes many rows (a transaction Bundle, $reindex, a bulk
// import, an expunge) calls this when it ends: each of the tables whose rows changed by more than a
// tenth since their last ANALYZE (and at least MIN_CHANGED rows) is analysed. Search does not depend on
// it to stay fast (shared/fhir/search/bounded.ts), but other plans do better with current statistics.
import type { Sql } from './client'
import { log } from '../log'

const MIN_CHANGED = 1000
/** One job at a time analyses; the others skip (the tables they grew are analysed by that one or the next). */
const ANALYZE_LOCK = 0x616e_616c // "anal"

/** The tables of the schema that were analysed; never throws (statistics are an optimisation). */
export async function analyzeGrownTables(sql: Sql): Promise<string[]> {
  try {
    return await sql.begin(async (tx) => {
      const [{ locked }] = await tx`select pg_try_advisory_xact_lock(${ANALYZE_LOCK}) as locked`
      if (!locked) return []
      const grown = await tx<{ name: string }[]>`
        select relname as name from pg_stat_user_tables
        where schemaname = current_schema() and n_mod_since_analyze >= greatest(${MIN_CHANGED}, n_live_tup / 10)
        order by relname`
      for (const t of grown) await tx`analyze ${tx(t.name)}`
      return grown.map((t) => t.name)
    })
  } catch (err) {
    log.warn('analyze after a bulk write failed', { err: (err as Error).message })
    return []
  }
}
