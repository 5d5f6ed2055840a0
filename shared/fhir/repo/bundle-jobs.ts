// The ledger of transaction jobs (bundle_job): a job's entry results are recorded in the transaction
// that writes its Bundle, so a job retried after its worker died between the commit and the queue's
// completion finds them and writes nothing again (two racing attempts collide on the job id).
import type { Sql, TxSql } from '../../db/client'

export async function recordedResults<R>(sql: Sql, jobId: string): Promise<Map<number, R> | undefined> {
  const [done] = await sql<{ results: string }[]>`select results from bundle_job where job_id = ${jobId}`
  return done ? new Map<number, R>(JSON.parse(done.results)) : undefined
}

export async function recordResults<R>(tx: TxSql, jobId: string, results: Map<number, R>): Promise<void> {
  await tx`insert into bundle_job (job_id, results) values (${jobId}, ${JSON.stringify([...results])})`
}
