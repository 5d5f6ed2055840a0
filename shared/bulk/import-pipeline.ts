// The $import job's batches in flight: several are written at once (IN_FLIGHT), so that the database
// works on one while another waits on its round trips, and the worker reads, validates and prepares the
// next meanwhile (its versions, index rows and COPY text, before its transaction: import-batch.ts). The pipeline lasts the whole job, across its inputs: an input's last batches are still being written while the next
// input is opened and read (draining it at each input's end left both cores idle in turn, once per file).
// A batch starts once the one before holds its row locks (a resource in both waits for the first to
// commit, never the other way round), and commits after it, its checkpoint last: checkpoints commit in
// the order of the batches, so a resumed job starts where the last committed one left off. A large line
// is a batch of its own, held back while other large text is in flight, and from ALONE_CHARS written
// with nothing else in flight (memory: a worker holds each line many times over while it is written).
import type { TxSql } from '../db/client'
import type { Repo } from '../fhir/repo/repo'
import { type BatchCounts, type ImportLine, prepareNewBatch, writeImportBatch } from './import-batch'

/**
 * Batches written at once. Each batch's connection idles while the worker builds another's COPY text or
 * reads the next: with three, PostgreSQL has a batch to work on meanwhile. Synthea x10 end to end
 * (bench/bulk-import.ts, alternated on the loaded machine): 1,269 and 1,268 resources/s against 971 and
 * 1,075 with two, the same CPU per resource; worker RSS growth 161-186 MB against 140-144.
 */
const IN_FLIGHT = 3

/** Runs in the batch's transaction, once every earlier batch has committed: the batch's checkpoint. */
export type AfterBatch = (tx: TxSql, counts: BatchCounts, bad: { line: number; outcome: string }[]) => Promise<void>

/**
 * A batch's text: the characters of its lines, and whether it is one large line alone (import-job.ts,
 * LARGE_LINE_CHARS), which the pipeline holds back while too much other text is in flight.
 */
export interface BatchText {
  chars: number
  large: boolean
}

/**
 * The text of large lines' batches (and of the batches in flight with them) at most in flight when one
 * is prepared: about 8 to 12 times as much is held while a batch is prepared and written (the parsed
 * resource, the stored JSON, the COPY text, index and full-text rows). Lines of 1 to 4 MB are still
 * written two or three at once, as small lines' batches are: 100 lines of 1.1 MB took 2.4-3.7 s against
 * 2.6-3.0 s before (5.0 s one after the other), the worker growing by 62-90 MB against 142-168 MB.
 */
const LARGE_IN_FLIGHT_CHARS = 8 * 1024 * 1024
/**
 * A line of this many characters or more is prepared and written alone: every batch before it commits
 * first, a full collection (30-60 ms) frees what they and the line's reading left, and nothing is read or
 * prepared while it is written, so that a worker holds one such line's copies at a time whatever the
 * number of them. bench/import-large-lines.ts, 1, 3 and 12 lines of 15 MB (Binary): 65, 120 and 117 MB
 * of growth, against 104, 290 and 481 MB with three batches in flight; 12 lines of 4.1 MB: 34-37 MB
 * against 168, in 1.5-1.6 s against 1.2-1.8 s.
 */
export const ALONE_CHARS = 4 * 1024 * 1024

export class ImportPipeline {
  /** The writes not yet known to have committed, oldest first, with the resources (keys) each writes. */
  private readonly writes: { done: Promise<void>; keys: Set<string>; chars: number }[] = []
  private locked: Promise<void> | undefined
  /** The last batch written created every resource it had: the next is prepared as new ones. */
  private expectNew = true

  constructor(
    private readonly repo: Repo,
    private readonly depth = IN_FLIGHT,
  ) {}

  /**
   * Prepares `items` (valid and bad lines), waits until fewer than `depth` batches are in flight, and
   * starts writing them; resolves once started, so that the worker reads the next batch while `depth`
   * are written. A failed batch rejects in a later `commit` or in `drain`; the batches after it roll back.
   * A large line's batch (`text.large`) waits for room before it is prepared (LARGE_IN_FLIGHT_CHARS), and
   * one of ALONE_CHARS or more is written alone: `commit` then resolves once it has committed.
   */
  async commit(items: ImportLine[], after: AfterBatch, text: BatchText = { chars: 0, large: false }): Promise<void> {
    const alone = text.large && text.chars >= ALONE_CHARS
    if (text.large) {
      const room = () => this.writes.length < this.depth && this.writes.reduce((n, w) => n + w.chars, text.chars) <= LARGE_IN_FLIGHT_CHARS
      while (this.writes.length > 0 && (alone || !room())) await this.writes.shift()?.done
      // What the batches before it and this line's reading left: one full collection a line, 30 to 60 ms.
      if (alone) fullGc()
    }
    const good = items.filter((i): i is Extract<ImportLine, { key: string }> => 'key' in i)
    const bad = items.filter((i): i is Extract<ImportLine, { outcome: string }> => 'outcome' in i)
    // The batch's CPU work (versions, index rows, COPY text) before its transaction, so that the
    // database never waits on the worker inside one; guessed from the batch before, which created all
    // of its resources (a re-run, whose resources exist, plans against them in the transaction instead).
    const prepared = this.expectNew && good.length > 0 ? await prepareNewBatch(this.repo, good) : undefined
    // Room for it: the worker has read and prepared this batch while `depth` were written.
    while (this.writes.length >= this.depth) await this.writes.shift()?.done
    // A resource that a batch in flight also writes (a file naming it on several lines) waits for that
    // batch to commit: the order of `locked` below holds only for rows that exist, as SELECT ... FOR
    // UPDATE locks no row that an uncommitted batch is creating. Both batches then inserted it, the one
    // that lost retried, and its retry could wait on the row lock of a later batch that itself waited for
    // it to commit (a file with one resource on three lines stalled until the statement timeout).
    const keys = new Set(good.map((i) => i.key))
    for (let last = this.lastWriting(keys); last >= 0; last--) await this.writes.shift()?.done
    const prior = this.writes[this.writes.length - 1]?.done
    await this.locked
    let lockedNow: () => void = () => {}
    this.locked = new Promise<void>((resolve) => {
      lockedNow = resolve
    })
    const writing = (async () => {
      try {
        await writeImportBatch(
          this.repo,
          good,
          lockedNow,
          async (tx, counts) => {
            this.expectNew = counts.created === good.length
            await prior // the batch before has committed (when it failed, this one rolls back)
            await after(tx, counts, bad)
          },
          prepared,
        )
      } finally {
        lockedNow() // failed before its locks: the next one is not held up (it rolls back on `prior`)
      }
    })()
    writing.catch(() => {}) // handled where it is awaited: by a later commit, or by drain
    this.writes.push({ done: writing, keys, chars: text.chars })
    // Nothing is read or prepared while a batch alone is written (what it built is collected with what the
    // next line's reading leaves, before that line is prepared).
    if (alone) await this.drain()
    collectGarbage()
  }

  /** The index of the last batch in flight that writes one of `keys`, or -1. */
  private lastWriting(keys: Set<string>): number {
    for (let i = this.writes.length - 1; i >= 0; i--) {
      for (const key of this.writes[i].keys) if (keys.has(key)) return i
    }
    return -1
  }

  /** Resolves once every batch started has committed. */
  async drain(): Promise<void> {
    await this.writes[this.writes.length - 1]?.done
    this.writes.length = 0
  }
}

/**
 * Memory stays flat whatever the input's size: batches of parsed resources are garbage once written, and
 * left to itself the JavaScript heap grows far past what is live before it collects. Measured on Synthea
 * x10 (135,000 resources): worker RSS growth 138-208 MB with no help, 102 MB with a collection asked
 * after each batch, 72 MB when every 8,000 lines it was a full synchronous one (a full one after every
 * batch cost 45 µs per resource). A batch outlives the young collection after it (it is in flight for
 * three more), so its garbage is old and only a full collection frees it; a full one marks every live
 * object (the definitions' tables, some 200,000, 20-50 ms each), so it runs when the heap has grown by
 * FULL_GC_GROWTH since the last, not every so many lines. Synthea x10 (bench/bulk-import.ts 10
 * --first-only, loaded machine, 2026-11-28): 30-34 full collections against 67 every 2,000 lines, worker
 * collection CPU 14.5-15.9 against 25.6 µs per resource, RSS growth 147-165 MB against 148 (40 MB: 19.9
 * µs, 90 MB; 80 MB: 13 µs, 196 MB).
 */
const FULL_GC_GROWTH = 60_000_000
/** The heap's size after the last full collection (bytes). */
let afterFullGc = 0

function collectGarbage(): void {
  const heap = Bun.gc(false) as unknown as number // Bun.gc answers the heap's size; its type says void
  if (heap - afterFullGc > FULL_GC_GROWTH) fullGc()
}

function fullGc(): void {
  afterFullGc = Bun.gc(true) as unknown as number
}
