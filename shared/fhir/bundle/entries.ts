// A transaction or batch Bundle read into entries the processors can work on, with HAPI's checks:
// Bundle.type, request.method and url, placeholder fullUrls, duplicates, size.
// https://hl7.org/fhir/R4/http.html#transaction
import { AppError, invalid } from '../../errors'
import { isResourceType } from '../definitions/resource-types'

export type EntryMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

export interface BundleEntry {
  /** Position in the request Bundle. */
  index: number
  method: EntryMethod
  /** request.url as sent. */
  url: string
  type?: string
  id?: string
  /** The part after `?` for conditional URLs and searches. */
  query?: string
  fullUrl?: string
  resource?: any
  ifNoneExist?: string
  ifMatch?: string
  ifNoneMatch?: string
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'])

/** HAPI's processing order of entries: DELETE, POST, PUT, PATCH, then GET/HEAD. */
export const VERB_ORDER: Record<EntryMethod, number> = { DELETE: 0, POST: 1, PUT: 2, PATCH: 3, GET: 4, HEAD: 4 }
const PLACEHOLDER = /^urn:(uuid|oid):/

export function readBundle(body: unknown, maxEntries: number): { type: 'transaction' | 'batch'; entries: BundleEntry[] } {
  const bundle = body as any
  if (!bundle || typeof bundle !== 'object' || bundle.resourceType !== 'Bundle')
    throw invalid(`HAPI-0339: Unable to process request: the body must be a Bundle resource, found ${bundle?.resourceType ?? typeof bundle}`)
  // HAPI: "Transaction Bundle did not specify valid Bundle.type, assuming transaction".
  const type = bundle.type ?? 'transaction'
  if (type !== 'transaction' && type !== 'batch') throw invalid(`HAPI-0527: Unable to process transaction where incoming Bundle.type = ${type}`)
  if (bundle.entry !== undefined && !Array.isArray(bundle.entry))
    throw invalid(`HAPI-1861: Failed to parse JSON encoded FHIR content: Bundle.entry must be an array, found ${typeof bundle.entry}`, 'Bundle.entry')
  const raw: any[] = bundle.entry ?? []
  if (raw.length > maxEntries)
    throw new AppError('too-large', `HAPI-0528: Transaction Bundle has ${raw.length} entries, more than the maximum of ${maxEntries}`)
  const seen = new Set<string>()
  const entries = raw.map((e, index) => readEntry(e, index, seen))
  if (type === 'transaction') assertDistinctTargets(entries)
  return { type, entries }
}

function readEntry(e: any, index: number, seenFullUrls: Set<string>): BundleEntry {
  const where = `Bundle.entry[${index}]`
  const method = e?.request?.method
  // HAPI (BaseTransactionProcessor): a missing or unknown verb is HAPI-0529, a missing URL HAPI-0545, a
  // URL that does not start with a resource type HAPI-2006.
  if (typeof method !== 'string' || !METHODS.has(method))
    throw invalid(
      `HAPI-0529: Transaction bundle entry has missing or invalid HTTP Verb specified in ${where}.request.method. Found value: "${method ?? ''}"`,
      `${where}.request.method`,
    )
  const url = e.request.url
  if (typeof url !== 'string' || url === '')
    throw invalid(`HAPI-0545: Unable to perform ${method}, no URL provided in ${where}.request.url`, `${where}.request.url`)
  const entry: BundleEntry = { index, method: method as EntryMethod, url }
  if (typeof e.fullUrl === 'string' && e.fullUrl !== '') {
    if (seenFullUrls.has(e.fullUrl)) throw invalid(`HAPI-0534: Transaction bundle contains multiple resources with ID: ${e.fullUrl}`, `${where}.fullUrl`)
    seenFullUrls.add(e.fullUrl)
    if (e.fullUrl.startsWith('urn:') && !PLACEHOLDER.test(e.fullUrl))
      throw invalid(`HAPI-0533: Invalid placeholder ID found: ${e.fullUrl} - Must be of the form 'urn:uuid:[uuid]' or 'urn:oid:[oid]'`, `${where}.fullUrl`)
    entry.fullUrl = e.fullUrl
  }
  if (e.resource !== undefined) entry.resource = e.resource
  if (typeof e.request.ifNoneExist === 'string') entry.ifNoneExist = e.request.ifNoneExist
  if (typeof e.request.ifMatch === 'string') entry.ifMatch = e.request.ifMatch
  if (typeof e.request.ifNoneMatch === 'string') entry.ifNoneMatch = e.request.ifNoneMatch
  const [path, query] = splitUrl(url)
  const parts = path.split('/').filter(Boolean)
  if (parts.length === 0 || !isResourceType(parts[0])) {
    if (method === 'GET' || method === 'HEAD') {
      entry.query = query
      return entry // a system-level read (metadata, _history, search) is served by the router
    }
    throw invalid(`HAPI-2006: Unable to perform ${method}, URL provided is invalid: ${url} (${where}.request.url)`, `${where}.request.url`)
  }
  entry.type = parts[0]
  if (parts.length > 1) entry.id = parts[1]
  if (query !== undefined) entry.query = query
  if (method === 'POST' || method === 'PUT') {
    if (!entry.resource || typeof entry.resource !== 'object') throw invalid(`HAPI-0530: ${where} has method ${method} but no resource`, `${where}.resource`)
    if (entry.resource.resourceType !== entry.type)
      throw invalid(`HAPI-0531: ${where}: resource type ${entry.resource.resourceType} does not match request.url ${url}`, `${where}.resource`)
  }
  if ((method === 'PUT' || method === 'DELETE' || method === 'PATCH') && entry.id === undefined && !entry.query)
    throw invalid(`HAPI-2006: Unable to perform ${method}, URL provided is invalid: ${url} (${where}.request.url)`, `${where}.request.url`)
  return entry
}

/** A transaction cannot write one resource twice (HAPI-0535): two PUT entries on the same Type/id. */
function assertDistinctTargets(entries: BundleEntry[]): void {
  const seen = new Set<string>()
  for (const e of entries) {
    if (e.method !== 'PUT' || e.id === undefined || e.query !== undefined) continue
    const key = `${e.type}/${e.id}`
    if (seen.has(key)) throw invalid(`HAPI-0535: Transaction bundle contains multiple resources with ID: ${key}`, `Bundle.entry[${e.index}].request.url`)
    seen.add(key)
  }
}

function splitUrl(url: string): [string, string | undefined] {
  // Absolute URLs on any base: keep what follows the last [Type]/ segment boundary we understand.
  let u = url
  const m = /^https?:\/\/[^/]+\/(?:.*?\/)?(?=[A-Z][A-Za-z]+(?:[/?]|$))/.exec(u)
  if (m) u = u.slice(m[0].length)
  const q = u.indexOf('?')
  return q < 0 ? [u, undefined] : [u.slice(0, q), u.slice(q + 1)]
}
