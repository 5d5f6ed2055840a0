// POST [base] with a transaction or batch Bundle, processed by a worker. The API waits for the result
// (the response Bundle's JSON text, sent on as is), or with `Prefer: respond-async` answers 202 with a
// status URL that any node can serve: 202 with progress while running, then the response Bundle (or the
// error).
// https://hl7.org/fhir/R4/async.html
import type { Principal } from '../../shared/auth/api-keys'
import { readBundle } from '../../shared/fhir/bundle/entries'
import type { FhirContext, FhirRequest, FhirResponse } from '../../shared/fhir/request'
import { AppError } from '../../shared/errors'
import { failureOf, type Jobs } from '../../shared/jobs/queues'
import { TransactionBundleJob } from '../../shared/jobs/transaction-bundle'
import { formatOf, parseAs } from './negotiate'

export async function submitBundle(req: FhirRequest, ctx: FhirContext, jobs: Jobs, principal: Principal | undefined): Promise<FhirResponse> {
  const respondAsync = /respond-async/i.test(req.headers.prefer ?? '')
  const data = {
    body: bundleJson(req, ctx, respondAsync),
    prefer: req.headers.prefer,
    baseUrl: ctx.baseUrl,
    ...(principal ? { scopes: [...principal.scopes] } : {}),
  }
  if (respondAsync) {
    const id = await jobs.enqueue(TransactionBundleJob, data)
    return {
      status: 202,
      headers: { 'content-location': statusUrl(ctx, id) },
      resource: {
        resourceType: 'OperationOutcome',
        issue: [{ severity: 'information', code: 'informational', diagnostics: `Bundle accepted for processing as job ${id}` }],
      },
    }
  }
  let result: unknown
  try {
    result = await jobs.run(TransactionBundleJob, data)
  } catch (err) {
    return failed(failureOf(err))
  }
  if (typeof result !== 'string') throw new Error('the transaction job completed without its response Bundle')
  return { status: 200, text: result }
}

/**
 * The Bundle as JSON for the worker. JSON goes on as the bytes received: the worker decodes, parses (with
 * decimals kept as written) and checks it, and for a synchronous request its 400 or 413 is this request's
 * answer, so the API node neither decodes nor parses megabytes a second time. An asynchronous request is
 * checked here first, so that a bad Bundle is refused at once rather than at its status URL; XML is read
 * into JSON here.
 */
function bundleJson(req: FhirRequest, ctx: FhirContext, respondAsync: boolean): string | Uint8Array {
  const bytes = req.bodyBytes ?? new Uint8Array()
  const kind = formatOf(firstNonBlank(bytes), req.headers.contentType ?? null)
  if (kind === 'json' && !respondAsync) return bytes
  const text = new TextDecoder().decode(bytes)
  const body = kind === undefined ? undefined : parseAs(kind, text, true)
  readBundle(body, ctx.config.maxBundleEntries) // 400/413 before anything is queued
  return kind === 'xml' ? JSON.stringify(body) : text
}

/** The first character of the body that is not JSON or XML whitespace; undefined when there is none. */
function firstNonBlank(bytes: Uint8Array): string | undefined {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return String.fromCharCode(b)
  return undefined
}

/** GET [base]/$bundle-status?_jobId=... */
export async function bundleStatus(req: FhirRequest, ctx: FhirContext, jobs: Jobs): Promise<FhirResponse> {
  const id = req.query.get('_jobId')
  if (!id) throw new AppError('invalid', 'Missing _jobId parameter')
  const s = await jobs.status(TransactionBundleJob, id)
  if (!s) throw new AppError('not-found', `Job ${id} is not known (finished jobs are kept for an hour)`)
  if (s.state === 'completed') {
    if (typeof s.result !== 'string') throw new AppError('not-found', `The result of job ${id} is no longer kept`)
    return { status: 200, text: s.result }
  }
  if (s.state === 'failed') return failed(s.error ?? { status: 500, message: 'job failed' })
  const progress = s.progress ? `${s.progress.done} of ${s.progress.total} entries` : s.state
  return {
    status: 202,
    headers: { 'x-progress': progress, 'content-location': statusUrl(ctx, id), 'retry-after': '1' },
    resource: {
      resourceType: 'OperationOutcome',
      issue: [{ severity: 'information', code: 'informational', diagnostics: `Job ${id} is ${s.state}: ${progress}` }],
    },
  }
}

function statusUrl(ctx: FhirContext, id: string): string {
  return `${ctx.baseUrl}/$bundle-status?_jobId=${encodeURIComponent(id)}`
}

function failed(error: { status: number; message: string; outcome?: unknown }): FhirResponse {
  const outcome = error.outcome ?? { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'processing', diagnostics: error.message }] }
  return { status: error.status, resource: outcome }
}
