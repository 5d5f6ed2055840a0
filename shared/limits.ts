// What one request may cost: every bound on the work a single client can cause, each a setting with a safe
// default, each refused with a 4xx that names it (README "Security"). The HTTP edge, the Bundle processor,
// search validation and the database pool read their bounds from here.
import { Type } from '@sinclair/typebox'

const Int = Type.String({ pattern: '^[0-9]+$' })

/** The environment variables of the limits (config.ts validates them with the rest). */
export const LimitsEnv = {
  MAX_BUNDLE_RESPONSE_BYTES: Type.Optional(Int),
  MAX_SEARCH_PARAMETERS: Type.Optional(Int),
  MAX_FILTER_TERMS: Type.Optional(Int),
  MAX_SORT_KEYS: Type.Optional(Int),
  MAX_INCLUDES: Type.Optional(Int),
  SEARCH_STATEMENT_TIMEOUT_MS: Type.Optional(Int),
  WRITE_STATEMENT_TIMEOUT_MS: Type.Optional(Int),
  JOB_STATEMENT_TIMEOUT_MS: Type.Optional(Int),
  FHIR_RATE_LIMIT: Type.Optional(Int),
  ANONYMOUS_RATE_LIMIT: Type.Optional(Int),
  PAGE_RATE_LIMIT: Type.Optional(Int),
  RATE_WINDOW_MS: Type.Optional(Int),
}

export interface Limits {
  /** Bytes of resources a batch or transaction answer may carry; entries beyond get a 413 outcome each. */
  maxBundleResponseBytes: number
  /** Search parameters (repeats included) one search may have. */
  maxSearchParameters: number
  /** Comparisons and logical terms in one `_filter`. */
  maxFilterTerms: number
  /** Keys of one `_sort`. */
  maxSortKeys: number
  /** `_include` and `_revinclude` values of one search. */
  maxIncludes: number
  /** PostgreSQL statement_timeout of each kind of work (0: none). */
  statementTimeoutMs: { search: number; write: number; job: number }
  /** Requests per window each API key may make on /fhir (0: no limit). */
  fhirRateLimit: number
  /** Requests per window each client address may make without a valid key, on every surface (0: no limit). */
  anonymousRateLimit: number
  /** Requests per window each client address may make to the hosted pages and operator endpoints (0: no limit). */
  pageRateLimit: number
  rateWindowMs: number
}

type LimitsVars = { [K in keyof typeof LimitsEnv]?: string }

const num = (v: string | undefined, dflt: number) => (v === undefined ? dflt : Number(v))

export function readLimits(e: LimitsVars): Limits {
  return {
    maxBundleResponseBytes: num(e.MAX_BUNDLE_RESPONSE_BYTES, 16 * 1024 * 1024),
    maxSearchParameters: num(e.MAX_SEARCH_PARAMETERS, 50),
    maxFilterTerms: num(e.MAX_FILTER_TERMS, 50),
    maxSortKeys: num(e.MAX_SORT_KEYS, 5),
    maxIncludes: num(e.MAX_INCLUDES, 10),
    statementTimeoutMs: {
      search: num(e.SEARCH_STATEMENT_TIMEOUT_MS, 30_000),
      write: num(e.WRITE_STATEMENT_TIMEOUT_MS, 120_000),
      job: num(e.JOB_STATEMENT_TIMEOUT_MS, 600_000),
    },
    fhirRateLimit: num(e.FHIR_RATE_LIMIT, 50_000),
    anonymousRateLimit: num(e.ANONYMOUS_RATE_LIMIT, 100),
    pageRateLimit: num(e.PAGE_RATE_LIMIT, 300),
    rateWindowMs: Math.max(1, num(e.RATE_WINDOW_MS, 1000)),
  }
}
