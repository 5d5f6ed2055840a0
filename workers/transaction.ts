// The transaction-bundle processor: the Bundle's JSON text parsed and checked (the API node forwards it
// unread), run by processBundle, and the response Bundle returned as JSON text. Input that will never
// work (4xx) fails at once; other errors are retried, and a transaction already committed by
// an earlier attempt is recognised by its job id and not applied again. A job whose worker died (it may be
// the Bundle that killed it) is not run blindly again: unless its commit was recorded, it fails at once
// with a reason the submitter sees.
import { UnrecoverableError } from 'bullmq'
import type { Config } from '../shared/config'
import { analyzeAfterBundle } from '../shared/db/analyze'
import { processBundle } from '../shared/fhir/bundle/process'
import { parseFhirJsonRequest } from '../shared/fhir/format/json'
import { errorOutcome, toAppError } from '../shared/fhir/outcome'
import type { Repo } from '../shared/fhir/repo/repo'
import { checkPayload } from '../shared/jobs/definition'
import type { JobProgress } from '../shared/jobs/progress'
import { TransactionBundleJob } from '../shared/jobs/transaction-bundle'

export function transactionProcessor(repo: Repo, config: Config, secret: string) {
  return async (data: unknown, job: { id: string; progress: (p: JobProgress) => void; stalls?: number; restarts?: number }) => {
    const payload = checkPayload(TransactionBundleJob, data)
    const ctx = { repo, config, baseUrl: payload.baseUrl, secret }
    let last = 0
    try {
      const text = typeof payload.body === 'string' ? payload.body : new TextDecoder().decode(payload.body) // bytes when run in process
      const bundle = parseFhirJsonRequest(text)
      // A cut batch cannot be run again: its entries commit one by one and record nothing (a transaction
      // records its results, and a second run finds them).
      if (job.restarts && (bundle as { type?: unknown })?.type === 'batch') throw new UnrecoverableError(JSON.stringify(batchCut(job.id)))
      if (job.stalls && !(await repo.recordedResults(job.id))) throw new UnrecoverableError(JSON.stringify(workerDied(job.id)))
      const res = await processBundle(ctx, bundle, {
        prefer: payload.prefer,
        maxEntries: config.maxBundleEntries,
        jobId: job.id,
        scopes: payload.scopes ? new Set(payload.scopes) : undefined,
        onProgress: (done, total) => {
          // at most twice a second (the status URL asks to be polled every second), and not the last one:
          // the job completes right after it. Each report is a Redis script and an event every API node reads.
          if (done < total && Date.now() - last > 500) {
            last = Date.now()
            job.progress({ done, total })
          }
        },
      })
      // A Bundle may grow the tables a lot (a load of Synthea patients): statistics follow (db/analyze.ts),
      // a table never analysed at once, the others once for the Bundles of a load.
      await analyzeAfterBundle(repo.sql)
      return res.text ?? JSON.stringify(res.resource) // the response Bundle, kept beside the job (blobs.ts)
    } catch (err) {
      if (err instanceof UnrecoverableError) throw err
      const e = toAppError(err)
      const failure = JSON.stringify({ status: e.status, message: e.message, outcome: errorOutcome(e) })
      throw e.status < 500 ? new UnrecoverableError(failure) : new Error(failure)
    }
  }
}

/** The failure of a batch whose run was cut: the entries done before are kept, the others not done. */
function batchCut(jobId: string): { status: number; message: string; outcome: unknown } {
  const message = `The server stopped while processing this batch (job ${jobId}): the entries finished before the stop are applied, the others are not, and the batch is not run again (its entries would be applied twice). Read back what is missing and submit it again.`
  return { status: 500, message, outcome: { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'incomplete', diagnostics: message }] } }
}

/** The failure of a Bundle whose worker stopped before committing it: nothing was written. */
function workerDied(jobId: string): { status: number; message: string; outcome: unknown } {
  const message = `The worker processing this Bundle (job ${jobId}) stopped before finishing, for example out of memory; nothing was written and the Bundle is not run again. Submit it again, or in smaller Bundles.`
  return { status: 500, message, outcome: { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'exception', diagnostics: message }] } }
}
