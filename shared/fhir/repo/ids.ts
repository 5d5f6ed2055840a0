// Server-assigned resource ids: numeric, from resource_rid_seq (increment 100). Each process reserves a
// block of 100 with one nextval() and hands ids out locally, so a create costs no extra round trip.
import type { Sql, TxSql } from '../../db/client'

const BLOCK = 100n

export class IdAllocator {
  private next = 0n
  private end = 0n
  private pending: Promise<void> | undefined

  constructor(private readonly sql: Sql) {}

  /** `via` is the transaction to use when called inside one (a pool of one connection would deadlock). */
  async allocate(count = 1, via?: TxSql): Promise<string[]> {
    const out: string[] = []
    while (out.length < count) {
      if (this.next >= this.end) await this.refill(count - out.length, via)
      while (out.length < count && this.next < this.end) out.push(String(this.next++))
    }
    return out
  }

  /**
   * Ids up to `max` were given by other means (a bulk import of numeric ids, after which the sequence was
   * moved past them): a reserved block that could still hand one out is dropped.
   */
  skipPast(max: bigint): void {
    if (this.next <= max) this.next = this.end
  }

  private async refill(wanted: number, via?: TxSql): Promise<void> {
    if (this.pending) return this.pending
    this.pending = (async () => {
      const blocks = Math.max(1, Math.ceil(wanted / Number(BLOCK)))
      const rows = await (via ?? this.sql)<{ start: string }[]>`select nextval('resource_rid_seq')::text as start from generate_series(1, ${blocks})`
      // Blocks from one call are usually contiguous but need not be; keep the first, queue the rest.
      const starts = rows.map((r) => BigInt(r.start)).sort((a, b) => (a < b ? -1 : 1))
      this.next = starts[0]
      this.end = starts[0] + BLOCK
      for (let i = 1; i < starts.length && starts[i] === this.end; i++) this.end += BLOCK
    })().finally(() => {
      this.pending = undefined
    })
    return this.pending
  }
}
