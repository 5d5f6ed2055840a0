// The framework-free shape of a FHIR interaction: what the HTTP edge (or a Bundle entry) asks, and
// what an interaction answers. https://hl7.org/fhir/R4/http.html
import type { Config } from '../config'
import type { Client } from '../db/cancellable'
import type { Jobs } from '../jobs/queues'
import type { Redis } from '../redis'
import type { Repo } from './repo/repo'
import type { SearchQueries } from './search/query/queries'

export type FhirMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD'

export interface FhirRequest {
  method: FhirMethod
  /** Path segments after the FHIR base, e.g. ['Patient', '1', '_history', '2']. */
  path: string[]
  query: URLSearchParams
  headers: {
    ifMatch?: string
    ifNoneMatch?: string
    ifModifiedSince?: string
    ifNoneExist?: string
    prefer?: string
    contentType?: string
  }
  /** Parsed body: a resource, or for JSON Patch an array of operations. */
  body?: unknown
  /** The body's bytes as received: a Bundle posted to the base, which a worker decodes and parses
   *  (api/fhir/bundles.ts). */
  bodyBytes?: Uint8Array
}

export interface FhirResponse {
  status: number
  /** The resource to return, parsed. */
  resource?: any
  /** The resource to return as stored JSON text (saves a parse/stringify when sent as is). */
  text?: string
  etag?: string
  lastModified?: Date
  location?: string
  contentLocation?: string
  /** True when the body is a subset (_summary/_elements) or must otherwise not be altered further. */
  headers?: Record<string, string>
}

/** What the edges (the HTTP adapter, the Bundle worker) build a request's context from. */
export interface FhirContext {
  repo: Repo
  config: Config
  /** Absolute FHIR base URL, e.g. http://localhost:8080/fhir. */
  baseUrl: string
  /** The cluster's shared secret that signs paging links. */
  secret: string
  /** The job queues, for operations that run as jobs (absent inside a Bundle worker). */
  jobs?: Jobs
  /** Redis, for the $everything page cache (absent in the embedded form and inside a Bundle worker). */
  redis?: Redis
  /** The client: its `signal` aborts when it has gone, and its searches are then cancelled in the database.
   *  Read only by a search still running after a while (db/cancellable.ts): reading it costs. */
  client?: Client
}

/** What the router hands the interactions and operations: the context, and the search engine over the
 *  repository's database. Each interaction takes only the members it uses. */
export interface FhirServices extends FhirContext {
  search: SearchQueries
}
