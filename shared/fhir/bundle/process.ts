// POST [base] with a transaction or batch Bundle: read, run, and answer with the response Bundle in the
// request's entry order. Batch entries run one by one through the router, each in its own transaction.
// https://hl7.org/fhir/R4/http.html#transaction
import { toAppError, errorOutcome } from '../outcome'
import type { FhirContext, FhirMethod, FhirRequest, FhirResponse } from '../request'
import { route } from '../router'
import { type BundleEntry, readBundle, VERB_ORDER } from './entries'
import { type EntryResult, entryEtag, statusText } from './results'
import { writeTransaction } from './transaction'
import { parseFhirJson } from '../format/json'

/** Batch entries in flight at once (each holds a database connection while it runs). */
const BATCH_CONCURRENCY = 4

export interface BundleOptions {
  prefer?: string
  maxEntries: number
  /** Entries done of total, as work advances. */
  onProgress?: (done: number, total: number) => void
  /** The job processing this Bundle: makes a retried transaction idempotent. */
  jobId?: string
}

export async function processBundle(ctx: FhirContext, body: unknown, opts: BundleOptions): Promise<FhirResponse> {
  const { type, entries } = readBundle(body, opts.maxEntries)
  const representation = /return\s*=\s*representation/i.test(opts.prefer ?? '')
  const results = new Map<number, EntryResult>()
  const total = entries.length
  opts.onProgress?.(0, total)
  if (type === 'transaction') {
    for (const [i, r] of await writeTransaction(ctx, entries, representation, opts.jobId)) results.set(i, r)
    opts.onProgress?.(results.size, total)
    for (const e of entries.filter((x) => x.method === 'GET' || x.method === 'HEAD')) results.set(e.index, await runEntry(ctx, e, opts.prefer, true))
  } else {
    // Batch entries are independent: each verb class (HAPI's order DELETE, POST, PUT, PATCH, GET) runs a
    // few entries at a time, each in its own transaction; identical conditional creates still serialise
    // on their advisory lock.
    for (let cls = 0; cls <= 4; cls++) {
      const group = entries.filter((e) => VERB_ORDER[e.method] === cls)
      let next = 0
      const lane = async () => {
        while (next < group.length) {
          const e = group[next++]
          results.set(e.index, await runEntry(ctx, e, opts.prefer, representation))
          opts.onProgress?.(results.size, total)
        }
      }
      await Promise.all(Array.from({ length: Math.min(BATCH_CONCURRENCY, group.length) }, lane))
    }
  }
  opts.onProgress?.(total, total)
  const bundle = {
    resourceType: 'Bundle',
    id: crypto.randomUUID(),
    type: type === 'transaction' ? 'transaction-response' : 'batch-response',
    link: [{ relation: 'self', url: ctx.baseUrl }],
    entry: entries.map((e) => {
      const r = results.get(e.index) as EntryResult
      const { resource, ...response } = r
      return resource !== undefined ? { resource, response } : { response }
    }),
  }
  return { status: 200, resource: bundle }
}

/** One entry through the router: batch entries, and the GET entries of a transaction. */
async function runEntry(ctx: FhirContext, e: BundleEntry, prefer: string | undefined, withResource: boolean): Promise<EntryResult> {
  const q = e.url.indexOf('?')
  const path = (q < 0 ? e.url : e.url.slice(0, q))
    .replace(/^https?:\/\/[^?]*?\/(?=[A-Z$_][^/]*(?:\/|$))/, '')
    .split('/')
    .filter(Boolean)
  const req: FhirRequest = {
    method: e.method as FhirMethod,
    path,
    query: new URLSearchParams(q < 0 ? '' : e.url.slice(q + 1)),
    headers: {
      ifMatch: e.ifMatch,
      ifNoneMatch: e.ifNoneMatch,
      ifNoneExist: e.ifNoneExist,
      prefer: withResource ? 'return=representation' : (prefer ?? 'return=minimal'),
    },
    body: e.resource,
  }
  try {
    const res = await route(req, ctx)
    const out: EntryResult = { status: statusText(res.status) }
    if (res.location ?? res.contentLocation) out.location = relative(ctx, (res.location ?? res.contentLocation) as string)
    if (res.etag) out.etag = entryEtag(res.etag)
    if (res.lastModified) out.lastModified = res.lastModified.toISOString()
    const resource = res.resource ?? (res.text !== undefined ? parseFhirJson(res.text) : undefined)
    if (resource?.resourceType === 'OperationOutcome' && e.method !== 'GET') out.outcome = resource
    else if (resource !== undefined && (withResource || e.method === 'GET' || e.method === 'HEAD')) out.resource = resource
    return out
  } catch (err) {
    const appErr = toAppError(err)
    return { status: statusText(appErr.status), outcome: errorOutcome(appErr) }
  }
}

function relative(ctx: Pick<FhirContext, 'baseUrl'>, url: string): string {
  return url.startsWith(`${ctx.baseUrl}/`) ? url.slice(ctx.baseUrl.length + 1) : url
}
