// Bulk Data files in PostgreSQL: one row per chunk (text, lz4-compressed where the server has it), read
// back one chunk at a time. sql/migrations/0019_bulk_data.sql.
import type { Sql, TxSql } from '../db/client'
import { assertFileIds, type BulkFileStore } from './file-store-contract'

export class PgFileStore implements BulkFileStore {
  readonly inDatabase = true

  constructor(private readonly sql: Sql) {}

  async putChunk(jobId: string, fileId: string, n: number, text: string, tx?: TxSql): Promise<void> {
    assertFileIds(jobId, fileId)
    const q = (tx ?? this.sql) as Sql
    await q`insert into bulk_chunk (job_id, file_id, n, data) values (${jobId}, ${fileId}, ${n}, ${text})
      on conflict (job_id, file_id, n) do update set data = excluded.data`
  }

  read(jobId: string, fileId: string, chunks: number): ReadableStream<Uint8Array> {
    assertFileIds(jobId, fileId)
    const encoder = new TextEncoder()
    let n = 0
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        if (n >= chunks) return controller.close()
        const [row] = await this.sql<{ data: string }[]>`select data from bulk_chunk where job_id = ${jobId} and file_id = ${fileId} and n = ${n}`
        if (!row) return controller.error(new Error(`bulk file ${jobId}/${fileId} is missing chunk ${n}`))
        n++
        controller.enqueue(encoder.encode(row.data))
      },
    })
  }

  async removeJob(jobId: string): Promise<void> {
    assertFileIds(jobId)
    await this.sql`delete from bulk_chunk where job_id = ${jobId}`
  }
}
