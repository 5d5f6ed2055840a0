// POST [base] with a transaction or batch Bundle: read, run, and answer with the response Bundle in the
// request's entry order. Batch entries run one by one through the router, each in its own transaction.
// The resources read by GET entries stay JSON text and count against MAX_BUNDLE_RESPONSE_BYTES: an entry
// beyond the budget is answered 413 instead (the answer, and this process, stay bounded).
// https://hl7.org/fhir/R4/http.html#transaction
import { AppError } from '../../errors'
import { toAppError, errorOutcome } from '../outcome'
import type { FhirContext, FhirMethod, FhirRequest, FhirResponse } from '../request'
import { requiredScope, route } from '../router'
import { hasScope, type Scope } from '../../auth/api-keys'
import { type BundleEntry, readBundle, VERB_ORDER } from './entries'
import { type EntryResult, entryEtag, inEntrySync, statusText } from './results'
import { writeTransaction } from './transaction'
import { parseFhirJson } from '../format/json'

/** Batch write entries in flight at once (each holds a database connection while it runs). */
const BATCH_CONCURRENCY = 4

export interface BundleOptions {
  prefer?: string
  maxEntries: number
  /** Entries done of total, as work advances. */
  onProgress?: (done: number, total: number) => void
  /** The job processing this Bundle: makes a retried transaction idempotent. */
  jobId?: string
  /** The submitter's API-key scopes: each entry needs what the same request alone would (403 otherwise).
   *  Undefined: unrestricted (the server's own Bundles, authentication disabled). */
  scopes?: ReadonlySet<Scope>
}

export async function processBundle(ctx: FhirContext, body: unknown, opts: BundleOptions): Promise<FhirResponse> {
  const { type, entries } = readBundle(body, opts.maxEntries)
  const representation = /return\s*=\s*representation/i.test(opts.prefer ?? '')
  const results = new Map<number, EntryResult>()
  const budget = new ResponseBudget(ctx.config.limits.maxBundleResponseBytes)
  const total = entries.length
  opts.onProgress?.(0, total)
  if (type === 'transaction') {
    // A transaction is all or nothing: one entry its key may not make refuses the whole Bundle.
    if (opts.scopes) for (const e of entries) inEntrySync(e, () => authorizeEntry(opts.scopes, entryRequest(e, undefined, false)))
    for (const [i, r] of await writeTransaction(ctx, entries, representation, opts.jobId)) results.set(i, r)
    opts.onProgress?.(results.size, total)
    for (const e of entries.filter((x) => x.method === 'GET' || x.method === 'HEAD'))
      results.set(e.index, await runEntry(ctx, e, opts.prefer, true, budget, opts.scopes))
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
          results.set(e.index, await runEntry(ctx, e, opts.prefer, representation, budget, opts.scopes))
          opts.onProgress?.(results.size, total)
        }
      }
      // Reads go one at a time: a batch then holds at most its budget and the one answer being read.
      const lanes = cls === VERB_ORDER.GET ? 1 : BATCH_CONCURRENCY
      await Promise.all(Array.from({ length: Math.min(lanes, group.length) }, lane))
    }
  }
  opts.onProgress?.(total, total)
  const head = {
    resourceType: 'Bundle',
    id: crypto.randomUUID(),
    type: type === 'transaction' ? 'transaction-response' : 'batch-response',
    link: [{ relation: 'self', url: ctx.baseUrl }],
  }
  // Written as text: the resources of GET entries go in as the JSON text they were read as.
  const parts = entries.map((e) => {
    const { resource, resourceText, ...response } = results.get(e.index) as EntryResult
    const r = resourceText ?? (resource !== undefined ? JSON.stringify(resource) : undefined)
    return r !== undefined ? `{"resource":${r},"response":${JSON.stringify(response)}}` : `{"response":${JSON.stringify(response)}}`
  })
  return { status: 200, text: `${JSON.stringify(head).slice(0, -1)},"entry":[${parts.join(',')}]}` }
}

/** What is left of MAX_BUNDLE_RESPONSE_BYTES for the resources of one answer (UTF-16 units of JSON text). */
class ResponseBudget {
  private left: number
  constructor(private readonly max: number) {
    this.left = max
  }

  get spent(): boolean {
    return this.left <= 0
  }

  /** Takes `size` from the budget; false (nothing taken) when it does not fit. */
  take(size: number): boolean {
    if (size > this.left) {
      this.left = 0
      return false
    }
    this.left -= size
    return true
  }

  refusal(e: BundleEntry): EntryResult {
    const err = new AppError(
      'too-large',
      `Bundle.entry[${e.index}] (${e.method} ${e.url}) was not answered: the response Bundle reached MAX_BUNDLE_RESPONSE_BYTES (${this.max} bytes); ask for it on its own`,
    )
    return { status: statusText(err.status), outcome: errorOutcome(err) }
  }
}

/** One entry through the router: batch entries, and the GET entries of a transaction. */
async function runEntry(
  ctx: FhirContext,
  e: BundleEntry,
  prefer: string | undefined,
  withResource: boolean,
  budget: ResponseBudget,
  scopes: ReadonlySet<Scope> | undefined,
): Promise<EntryResult> {
  if (budget.spent && (e.method === 'GET' || e.method === 'HEAD')) return budget.refusal(e)
  const req = entryRequest(e, prefer, withResource)
  try {
    authorizeEntry(scopes, req)
    const res = await route(req, ctx)
    const out: EntryResult = { status: statusText(res.status) }
    if (res.location ?? res.contentLocation) out.location = relative(ctx, (res.location ?? res.contentLocation) as string)
    if (res.etag) out.etag = entryEtag(res.etag)
    if (res.lastModified) out.lastModified = res.lastModified.toISOString()
    if (e.method === 'GET' || e.method === 'HEAD') {
      const text = res.text ?? (res.resource !== undefined ? JSON.stringify(res.resource) : undefined)
      if (text === undefined) return out
      if (!budget.take(text.length)) return budget.refusal(e)
      out.resourceText = text
      return out
    }
    const resource = res.resource ?? (res.text !== undefined ? parseFhirJson(res.text) : undefined)
    if (resource?.resourceType === 'OperationOutcome') out.outcome = resource
    else if (resource !== undefined && withResource) out.resource = resource
    return out
  } catch (err) {
    const appErr = toAppError(err)
    return { status: statusText(appErr.status), outcome: errorOutcome(appErr) }
  }
}

/** An entry as the request it stands for. */
function entryRequest(e: BundleEntry, prefer: string | undefined, withResource: boolean): FhirRequest {
  const q = e.url.indexOf('?')
  const path = (q < 0 ? e.url : e.url.slice(0, q))
    .replace(/^https?:\/\/[^?]*?\/(?=[A-Z$_][^/]*(?:\/|$))/, '')
    .split('/')
    .filter(Boolean)
  return {
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
}

/** The scope the same request made alone needs (router.ts requiredScope), or 403. */
function authorizeEntry(scopes: ReadonlySet<Scope> | undefined, req: FhirRequest): void {
  if (!scopes) return
  const needed = requiredScope(req)
  if (!hasScope({ scopes }, needed)) throw new AppError('forbidden', `This API key lacks the "${needed}" scope needed for this request`)
}

function relative(ctx: Pick<FhirContext, 'baseUrl'>, url: string): string {
  return url.startsWith(`${ctx.baseUrl}/`) ? url.slice(ctx.baseUrl.length + 1) : url
}
