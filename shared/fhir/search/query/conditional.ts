// Conditional operations (If-None-Exist, PUT/DELETE/PATCH /{type}?query): a match URL resolved, inside the
// write transaction, to the current resources it matches. https://hl7.org/fhir/R4/http.html#ccreate
// Concurrent identical conditional writes are serialised by a transaction-scoped advisory lock on the
// normalised URL, so two identical conditional creates yield one resource (HAPI needs the unique table
// HFJ_RES_SEARCH_URL for this, PR #4609).
import { AppError, invalid } from '../../../errors'
import type { Sql } from '../../../db/client'
import type { WriteTx } from '../../repo/repo'
import type { StoredVersion } from '../../repo/types'
import { matchIds } from './execute'
import { parseSearch } from './parse'
import { assertSearchShape } from './shape'
import type { Limits } from '../../../limits'
import type { SearchQuery } from './query'
import { type SearchParamDef, searchParamFor } from '../registry'

/** Parameters that shape a response, never a match. */
const NOT_CRITERIA = new Set(['_format', '_pretty'])

export interface MatchUrl {
  type: string
  /** The criteria, empty values dropped. */
  params: URLSearchParams
  /** `Type?k=v&...` with the parameters sorted: the lock key. */
  normalised: string
  /** `Type?query` as the client wrote it, for messages. */
  text: string
}

export interface ConditionalMatch {
  url: MatchUrl
  query: SearchQuery
  /** At most 2: enough to tell none, one and many apart. */
  matches: StoredVersion[]
}

/**
 * Parses `identifier=sys|1`, `Patient?identifier=sys|1` (the type prefix must be `type`) or an already
 * parsed query. A literal `+` stays a `+` (HAPI does the same: `+` in an e-mail address is not a space).
 */
export function parseMatchUrl(type: string, matchUrl: string | URLSearchParams): MatchUrl {
  let raw: URLSearchParams
  let text: string
  if (typeof matchUrl === 'string') {
    const s = matchUrl.trim()
    const q = s.indexOf('?')
    const prefix = q >= 0 ? s.slice(0, q).replace(/^\//, '') : ''
    if (prefix !== '' && prefix !== type) throw invalid(`Invalid match URL "${s}": it names resource type "${prefix}" but this request is for "${type}"`)
    const query = q >= 0 ? s.slice(q + 1) : s
    if (/\s/.test(query)) throw invalid(`HAPI-1744: Failed to parse match URL[${s}] - URL is invalid (must not contain spaces)`)
    raw = new URLSearchParams(query.replaceAll('+', '%2B'))
    text = `${type}?${query}`
  } else {
    raw = matchUrl
    text = `${type}?${matchUrl.toString()}`
  }
  const params = new URLSearchParams()
  for (const [k, v] of raw) if (v !== '' && !NOT_CRITERIA.has(k)) params.append(k, v)
  if ([...params.keys()].length === 0) throw noCriteria(text)
  const sorted = [...params].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
  return { type, params, normalised: `${type}?${new URLSearchParams(sorted)}`, text }
}

/** 400 HAPI-0518: a match URL with nothing to match on. */
function noCriteria(text: string): AppError {
  return invalid(`HAPI-0518: Invalid match URL[${text}] - URL has no search parameters`)
}

/**
 * Resolves a match URL in the transaction `w`: first takes the advisory lock of its normalised form
 * (held until commit), then searches, so an identical conditional write waits and then sees this one's
 * result. Unknown parameters and bad values are a 400, as in any search.
 *
 * The search is planned for its values (plan_cache_mode set in the lock's own statement, and set back
 * after it). The pool's generic plans are made once per connection: made while a table was still small
 * (a fresh database at the start of a load), the plan of `identifier=system|value` read every resource
 * of the type and checked each one's token rows, so each conditional create of a batch load took longer
 * than the one before (synthea-conditional's Organizations and Locations: 3-5 ms per match by the end,
 * 0.06 ms on a plan for the values). Only the match: the write statements keep their generic plans,
 * which do not depend on the data and cost a tenth of a millisecond or more to plan again.
 */
/** What a match needs besides the transaction: the base URL that absolute local references are read
 *  against, and the search shape limits a match URL is held to as any search (shared/limits.ts). */
export interface MatchBase {
  baseUrl: string
  config: { limits: Limits }
}

export async function resolveConditional(
  w: WriteTx,
  { baseUrl, config }: MatchBase,
  type: string,
  matchUrl: string | URLSearchParams,
): Promise<ConditionalMatch> {
  const url = parseMatchUrl(type, matchUrl)
  // A match URL is a search: the same bounds before it is parsed or run (shape.ts).
  assertSearchShape(url.params, config.limits)
  const query = parseSearch([type], url.params, { defaultCount: 2, maxCount: 2 })
  if (query.criteria.length === 0) throw noCriteria(url.text)
  const [{ mode }] = await w.tx<{ mode: string }[]>`
    select current_setting('plan_cache_mode') as mode, set_config('plan_cache_mode', 'force_custom_plan', true),
      pg_advisory_xact_lock(hashtextextended(${url.normalised}, 0))`
  const matches = await matchIds(txSql(w), query, baseUrl, 2)
  await w.tx`select set_config('plan_cache_mode', ${mode}, true)`
  return { url, query, matches }
}

/**
 * HAPI checks that a conditionally created resource satisfies its own match URL (400 HAPI-0929 otherwise).
 * Here the same search runs again, restricted to the new resource, over the index rows the write just
 * added in this transaction; throwing rolls the write back.
 */
export async function assertMatchesOwnUrl(
  w: WriteTx,
  { baseUrl }: MatchBase,
  match: ConditionalMatch,
  id: string,
  op: 'create' | 'update' = 'create',
): Promise<void> {
  const idDef = searchParamFor(match.url.type, '_id') as SearchParamDef
  const query: SearchQuery = { ...match.query, criteria: [...match.query.criteria, { kind: 'param', def: idDef, values: [id] }] }
  const found = await matchIds(txSql(w), query, baseUrl, 1)
  if (found.length === 0)
    throw new AppError('invalid', `HAPI-0929: Failed to process conditional ${op}. The supplied resource did not satisfy the conditional URL.`)
}

/** HAPI's code for a match URL that matches more than one resource, by operation. */
const TOO_MANY = { CREATE: 'HAPI-0958', UPDATE: 'HAPI-0988', DELETE: 'HAPI-0962', PATCH: 'HAPI-0972' } as const

export type ConditionalOp = keyof typeof TOO_MANY

/**
 * The one current resource a resolved match URL names, or undefined for none; 412 when it matched more,
 * in HAPI's words: `HAPI-0988: Failed to UPDATE resource with match URL "..." because this search
 * matched 3 resources` (counted again here, on the error path).
 */
export async function singleMatch(w: WriteTx, base: MatchBase, op: ConditionalOp, match: ConditionalMatch): Promise<StoredVersion | undefined> {
  if (match.matches.length <= 1) return match.matches[0]
  const n = (await matchIds(txSql(w), match.query, base.baseUrl, MAX_COUNTED)).length
  const count = n >= MAX_COUNTED ? `${MAX_COUNTED} or more` : String(n)
  throw new AppError(
    'precondition-failed',
    `${TOO_MANY[op]}: Failed to ${op} resource with match URL "${match.url.text}" because this search matched ${count} resources`,
  )
}

/** 404 HAPI-0973: a conditional patch whose match URL names no resource. */
export function noMatch(match: ConditionalMatch): AppError {
  return new AppError('not-found', `HAPI-0973: Invalid match URL "${match.url.text}" - No resources match this search`)
}

const MAX_COUNTED = 100

// The search engine takes a Sql; a transaction's TransactionSql runs the same tagged templates.
const txSql = (w: WriteTx) => w.tx as unknown as Sql
