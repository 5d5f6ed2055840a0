// search: type (GET /{type}, POST /{type}/_search), system (GET /?_type=...) and compartment
// (GET /Patient/{id}/{type}) searches, answered as a searchset Bundle whose next/previous links carry
// a keyset cursor that any node can serve. https://hl7.org/fhir/R4/http.html#search
import { AppError } from '../../errors'
import { isResourceType } from '../definitions/resource-types'
import { encodePageToken, type PageToken, selfUrl } from '../paging'
import type { FhirRequest, FhirResponse, FhirServices } from '../request'
import { compartmentCriterion } from '../search/query/compartment'
import type { Cursor } from '../search/query/execute'
import type { SearchMatch } from '../search/query/match'
import { parseSearch } from '../search/query/parse'
import { assertSearchShape } from '../search/query/shape'
import { applySubset } from '../subset'
import { parseFhirJson } from '../format/json'

/** What a search uses of the router's services. */
type SearchDeps = Pick<FhirServices, 'search' | 'config' | 'baseUrl' | 'secret'>

interface SearchTarget {
  types: string[]
  compartment?: { type: string; id: string }
}

export async function searchType(req: FhirRequest, ctx: SearchDeps, type: string): Promise<FhirResponse> {
  return search(req, ctx, { types: [type] }, req.query)
}

export async function searchCompartment(req: FhirRequest, ctx: SearchDeps, compartment: string, id: string, type: string): Promise<FhirResponse> {
  return search(req, ctx, { types: [type], compartment: { type: compartment, id } }, req.query)
}

/** GET [base]?_type=A,B&... (all types when _type is absent). */
export async function searchSystem(req: FhirRequest, ctx: SearchDeps): Promise<FhirResponse> {
  const typeParam = req.query.get('_type')
  const types = typeParam ? typeParam.split(',').map((t) => t.trim()) : []
  for (const t of types) if (!isResourceType(t)) throw new AppError('invalid', `HAPI-1684: Unknown resource type "${t}" in _type`)
  return search(req, ctx, { types }, req.query)
}

/** A later page: the token holds the query and the cursor. */
export async function searchPage(req: FhirRequest, ctx: SearchDeps, token: PageToken): Promise<FhirResponse> {
  const t = token.q as { target: SearchTarget; query: string; cursor: Cursor }
  const query = new URLSearchParams(t.query)
  for (const k of ['_format', '_pretty']) if (req.query.has(k)) query.set(k, req.query.get(k) as string)
  return search(req, ctx, t.target, query, t.cursor)
}

async function search(req: FhirRequest, ctx: SearchDeps, target: SearchTarget, query: URLSearchParams, cursor?: Cursor): Promise<FhirResponse> {
  const lenient = /handling\s*=\s*lenient/i.test(req.headers.prefer ?? '')
  assertSearchShape(query, ctx.config.limits)
  const q = parseSearch(target.types, query, {
    defaultCount: ctx.config.defaultPageSize,
    maxCount: ctx.config.maxPageSize,
    lenient,
    rest: true,
    maxIncluded: ctx.config.maxIncludedResources,
  })
  if (target.compartment) q.criteria.push(compartmentCriterion(target.compartment.type, target.compartment.id, target.types[0]))
  const page = await ctx.search.page(q, ctx.baseUrl, cursor)
  const bundle: any = { resourceType: 'Bundle', id: crypto.randomUUID(), meta: { lastUpdated: new Date().toISOString() }, type: 'searchset' }
  if (page.total !== undefined) bundle.total = page.total
  const link = (dir: Cursor) => {
    const token: PageToken = { kind: 'search', q: { target, query: stripPaging(query).toString(), cursor: dir } }
    const params = new URLSearchParams({ _getpages: encodePageToken(token, ctx.secret), _bundletype: 'searchset' })
    for (const k of ['_format', '_pretty']) if (query.has(k)) params.set(k, query.get(k) as string)
    return `${ctx.baseUrl}?${params}`
  }
  bundle.link = [{ relation: 'self', url: cursor ? `${ctx.baseUrl}?${req.query}` : selfUrl(req, ctx.baseUrl) }]
  if (q.offset !== undefined) {
    // `_offset` paging, as HAPI: the links are this search again at the next and previous offsets.
    const at = (offset: number) => {
      const params = new URLSearchParams(req.query)
      params.set('_offset', String(offset))
      return selfUrl({ path: req.path, query: params }, ctx.baseUrl)
    }
    if (page.next) bundle.link.push({ relation: 'next', url: at(q.offset + q.count) })
    if (q.offset > 0) bundle.link.push({ relation: 'previous', url: at(Math.max(0, q.offset - q.count)) })
  } else {
    if (page.next) bundle.link.push({ relation: 'next', url: link(page.next) })
    if (page.previous) bundle.link.push({ relation: 'previous', url: link(page.previous) })
  }
  if (q.summaryCount) return { status: 200, resource: bundle }
  const outcome = page.includesCut ? [includesCutOutcome(page.includesCut.limit)] : []
  if (q.subset) {
    const subset = q.subset
    const entry = (v: SearchMatch, mode: 'match' | 'include') => ({
      fullUrl: `${ctx.baseUrl}/${v.type}/${v.id}`,
      resource: applySubset(parseFhirJson(v.content as string), subset),
      search: { mode },
    })
    bundle.entry = [...page.matches.map((m) => entry(m, 'match')), ...page.included.map((m) => entry(m, 'include')), ...outcome]
    return { status: 200, resource: bundle }
  }
  // The stored JSON of each resource is spliced in as it is: no parse and re-serialise per entry.
  const entry = (v: SearchMatch, mode: string) =>
    `{"fullUrl":${JSON.stringify(`${ctx.baseUrl}/${v.type}/${v.id}`)},"resource":${v.content},"search":{"mode":"${mode}"}}`
  const entries = [...page.matches.map((m) => entry(m, 'match')), ...page.included.map((m) => entry(m, 'include')), ...outcome.map((o) => JSON.stringify(o))]
  const head = JSON.stringify(bundle)
  return { status: 200, text: `${head.slice(0, -1)},"entry":[${entries.join(',')}]}` }
}

/**
 * The entry (search.mode `outcome`) that says the page's included resources were cut at `limit`. HAPI
 * cuts at 1,000 without a word; a client here learns that what it holds is incomplete, and what to do.
 * https://hl7.org/fhir/R4/bundle-definitions.html#Bundle.entry.search.mode
 */
function includesCutOutcome(limit: number): any {
  return {
    resource: {
      resourceType: 'OperationOutcome',
      issue: [
        {
          severity: 'warning',
          code: 'incomplete',
          diagnostics: `Only the first ${limit} resources found by _include and _revinclude are in this page (MAX_INCLUDED_RESOURCES = ${limit}); ask for fewer matches per page (_count) to have them all.`,
        },
      ],
    },
    search: { mode: 'outcome' },
  }
}

function stripPaging(query: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams()
  for (const [k, v] of query) if (k !== '_getpages' && k !== '_getpagesoffset' && k !== '_bundletype' && k !== '_format' && k !== '_pretty') out.append(k, v)
  return out
}
