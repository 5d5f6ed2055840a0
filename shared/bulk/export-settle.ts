// An export's transactionTime (T) settling while the export already reads. Versions take their
// lastUpdated on the writing node before their statement, so a write stamped up to T may commit after
// the scan has passed its row. settle() says when every such write has committed; meanwhile the job
// reads and writes its files as usual, and records what it wrote (Unsettled). Once settled, the rows
// it had read that a late write may have changed (lateRows: current lastUpdated at or after lateFrom)
// are read again, and the chunks holding their type and rid range written again; a late row of a type
// with no chunk there is added as a new line. Most exports find no such row: they lose no second.
import type { Sql } from '../db/client'
import { log } from '../log'

/** Writes in flight no longer than this may commit after transactionTime is taken (see settle()). */
export const SETTLE_MS = 1000
const SETTLE_WAIT_MAX_MS = 60_000

/** A chunk written before T settled: its file, number, and the rows it holds (one type, rids in (after, upTo]). */
export interface UnsettledChunk {
  fileId: string
  n: number
  type: string
  after: string
  upTo: string
  count: number
  bytes: number
}

/** What a job wrote before T settled (kept in its cursor, so a resumed job checks it too). */
export interface Unsettled {
  /** A write not yet committed when the scan began has a lastUpdated at or after this instant. */
  lateFrom: string
  chunks: UnsettledChunk[]
}

/**
 * The earliest lastUpdated a write not yet committed can have: a write's lastUpdated is taken at most
 * SETTLE_MS before its transaction begins (the rule settle() waits by), and an open transaction began
 * no earlier than the oldest of this database's. Taken before the scan's first page. A transaction
 * already open longer than settle() waits (`maxWaitMs`) is not waited for, so it moves the instant no
 * further back: one left open for hours would otherwise have every row written since read again, and
 * the chunks holding them rewritten in memory at once.
 */
export async function lateFrom(sql: Sql, maxWaitMs = SETTLE_WAIT_MAX_MS): Promise<string> {
  const [row] = await sql<{ at: Date }[]>`
    select greatest(now() - ${maxWaitMs} * interval '1 millisecond',
        least(now(), (select min(xact_start) from pg_stat_activity
          where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid())))
      - ${SETTLE_MS} * interval '1 millisecond' as at`
  return row.at.toISOString()
}

/**
 * Waits until writes that may carry a lastUpdated up to transactionTime have committed: the versions'
 * lastUpdated is taken by the writing node before its statement, so one in flight at the instant could
 * commit just after the scan passed its row. Waits SETTLE_MS past the instant (clock skew between nodes,
 * creates queued for a statement), then for every transaction of this database begun before that to end
 * (at most a minute: a transaction held longer is not waited for, and said so).
 */
export async function settle(sql: Sql, transactionTime: string): Promise<void> {
  const horizon = Date.parse(transactionTime) + SETTLE_MS
  const until = Date.now() + SETTLE_WAIT_MAX_MS
  for (;;) {
    const [row] = await sql<{ open: number; ahead: boolean }[]>`
      select (select count(*)::int from pg_stat_activity
              where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()
                and xact_start <= ${new Date(horizon)}) as open,
             now() > ${new Date(horizon)} as ahead`
    if (row.ahead && row.open === 0) return
    if (Date.now() > until) {
      log.warn('export: transactions begun before its transactionTime are still open; exporting without waiting for them', { open: row.open })
      return
    }
    await Bun.sleep(100)
  }
}

/** The chunks to write again for late rows, and the late rows no chunk holds (of a type with none in their range). */
export function lateWork(u: Unsettled, late: { rid: string; type: string }[]): { chunks: UnsettledChunk[]; uncovered: string[] } {
  const chunks = new Set<UnsettledChunk>()
  const uncovered: string[] = []
  for (const row of late) {
    const rid = BigInt(row.rid)
    const holding = u.chunks.filter((c) => c.type === row.type && rid > BigInt(c.after) && rid <= BigInt(c.upTo))
    if (holding.length === 0) uncovered.push(row.rid)
    for (const c of holding) chunks.add(c)
  }
  return { chunks: [...chunks], uncovered }
}
