// HAPI's legacy reindexing: $mark-all-resources-for-reindexing queues resources in reindex_pending, and
// a pass ($perform-reindexing-pass, or the scheduled one every 10 s) reindexes up to 25,000 of them.
// One pass runs at a time in the cluster (a transaction-scoped advisory lock).
import type { Sql } from '../../db/client'
import type { IndexWriter } from './collaborators'
import type { CurrentRow } from './current-pages'
import { reindexBatch } from './reindex'

const PASS_SIZE = 25_000
const BATCH = 1000
const PASS_LOCK = 0x7265_696e // "rein"

/** Queues every current resource (of one type) for reindexing; answers how many were queued. */
export async function markAllForReindexing(sql: Sql, type?: string): Promise<number> {
  const rows = await sql`
    insert into reindex_pending (rid)
    select rid from resource where not deleted and ${type ? sql`res_type = ${type}` : sql`true`}
    on conflict do nothing`
  return rows.count
}

/** One pass: `undefined` when another pass holds the lock, else how many resources it reindexed. */
export async function performReindexingPass(sql: Sql, indexes: IndexWriter): Promise<number | undefined> {
  return sql.begin(async (tx) => {
    const [{ locked }] = await tx`select pg_try_advisory_xact_lock(${PASS_LOCK}) as locked`
    if (!locked) return undefined
    let done = 0
    while (done < PASS_SIZE) {
      const rows = await tx<CurrentRow[]>`
        with taken as (
          delete from reindex_pending where rid in (select rid from reindex_pending order by rid limit ${Math.min(BATCH, PASS_SIZE - done)})
          returning rid)
        select r.rid::text as rid, r.res_type as type, r.version, r.content
        from taken t join resource r on r.rid = t.rid where not r.deleted`
      const taken = rows.count
      if (taken === 0) {
        const [{ left }] = await tx`select exists (select 1 from reindex_pending) as left`
        if (!left) break
      }
      done += await reindexBatch(tx, indexes, rows)
    }
    return done
  })
}
