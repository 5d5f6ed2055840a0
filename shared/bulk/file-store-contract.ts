// What a Bulk Data file store is, and the ids it accepts: file-store.ts chooses one, file-store-dir.ts
// and file-store-pg.ts are the two (their own file, so that they need not import the chooser).
import type { TxSql } from '../db/client'

export interface BulkFileStore {
  /** True when a chunk written with a transaction commits with it (PostgreSQL); false when it is written
   *  at once (a folder), before the checkpoint that records it. */
  readonly inDatabase: boolean
  /**
   * Writes chunk `n` of a file, replacing a chunk of that number written by an earlier attempt. With
   * `tx`, a store in the database writes it in the caller's transaction (it commits with the checkpoint).
   */
  putChunk(jobId: string, fileId: string, n: number, text: string, tx?: TxSql): Promise<void>
  /** The file's bytes: chunks 0 to `chunks - 1` in order, read one at a time. */
  read(jobId: string, fileId: string, chunks: number): ReadableStream<Uint8Array>
  /** Removes every file of a job (none left is not an error). */
  removeJob(jobId: string): Promise<void>
}

const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const FILE_ID = /^[A-Za-z0-9-]{1,80}$/

/** Ids reach paths and keys: only the shapes this program makes them in are accepted. */
export function assertFileIds(jobId: string, fileId?: string): void {
  if (!JOB_ID.test(jobId) || (fileId !== undefined && !FILE_ID.test(fileId))) throw new Error(`invalid bulk file id ${jobId}/${fileId}`)
}
