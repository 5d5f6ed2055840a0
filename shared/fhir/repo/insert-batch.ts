// Group commit for plain creates: creates that arrive while earlier ones are being written are written
// together, by one statement, as soon as a statement slot is free. A create's statement carries a dozen
// CTEs (resource, counts, index tables, reference check) whose executor set-up, commit and round trip
// cost more than the rows themselves; shared by the creates of one batch, they are paid once. When a
// batch fails, nothing of it was written (one statement), and each of its creates is written again on
// its own, so every create gets its own outcome (a missing reference fails only the create that holds it).
import type { NewVersion } from './types'

export type AfterCommit = () => Promise<void>

interface Pending {
  versions: NewVersion[]
  resolve: () => void
  reject: (err: unknown) => void
}

export class InsertBatcher {
  private queue: Pending[] = []
  private running = 0

  constructor(
    /** Writes versions in one statement (rejects with nothing written) and resolves with what is to run
     *  once it has committed. */
    private readonly write: (versions: NewVersion[]) => Promise<AfterCommit>,
    /** Statements in flight at once: a create waits for a free one, and waiting ones go together. */
    private readonly slots = 2,
    /** Versions per statement at most. */
    private readonly maxVersions = 64,
  ) {}

  insert(versions: NewVersion[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ versions, resolve, reject })
      this.pump()
    })
  }

  private pump(): void {
    while (this.running < this.slots && this.queue.length > 0) {
      const batch: Pending[] = []
      let size = 0
      while (this.queue.length > 0 && (batch.length === 0 || size + this.queue[0].versions.length <= this.maxVersions)) {
        const next = this.queue.shift() as Pending
        size += next.versions.length
        batch.push(next)
      }
      this.running++
      void this.run(batch).finally(() => {
        this.running--
        this.pump()
      })
    }
  }

  private async run(batch: Pending[]): Promise<void> {
    if (batch.length > 1) {
      let after: AfterCommit | undefined
      try {
        after = await this.write(batch.flatMap((p) => p.versions))
      } catch {
        // nothing of the batch was written: each create on its own
      }
      if (after) return settle(batch, after())
    }
    await Promise.all(
      batch.map((p) =>
        settle(
          [p],
          this.write(p.versions).then((after) => after()),
        ),
      ),
    )
  }
}

/** Resolves or rejects every create of `batch` with the outcome of `done`. */
async function settle(batch: Pending[], done: Promise<void>): Promise<void> {
  try {
    await done
    for (const p of batch) p.resolve()
  } catch (err) {
    for (const p of batch) p.reject(err)
  }
}
