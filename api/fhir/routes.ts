// HTTP adapter for /fhir: route -> negotiate -> authenticate -> shared FHIR router -> render.
import { isUtf8 } from 'node:buffer'
import { Elysia } from 'elysia'
import type { ApiKeyVerifier } from '../../shared/auth/api-keys'
import type { Config } from '../../shared/config'
import { AppError } from '../../shared/errors'
import { log } from '../../shared/log'
import { errorOutcome, toAppError } from '../../shared/fhir/outcome'
import type { Repo } from '../../shared/fhir/repo/repo'
import type { FhirContext, FhirMethod, FhirRequest } from '../../shared/fhir/request'
import { requiredScope, route } from '../../shared/fhir/router'
import { authenticateNow, authorize } from '../http/auth'
import { type SurfaceLimiters, surfaceLimiters, tooManyRequests } from '../http/rate-limit'
import type { RateCounts } from '../http/rate-counts'
import type { Peer } from '../../shared/net/client-address'
import type { Principal } from '../../shared/auth/api-keys'
import { type BulkFileStore, bulkFileStore } from '../../shared/bulk/file-store'
import { bulkStreamsBody, handleBulk, isBulkPath } from './bulk'
import { type Format, htmlEncoding, parseBody, responseFormat, wantsHtml, wantsPretty } from './negotiate'
import { bundleStatus, submitBundle } from './bundles'
import { render } from './respond'
import { XmlRenderCache } from '../../shared/fhir/format/xml-render-cache'
import type { Jobs } from '../../shared/jobs/queues'
import type { Redis } from '../../shared/redis'

export interface FhirDeps {
  config: Config
  repo: Repo
  verifier: ApiKeyVerifier
  jobs: Jobs
  /** Signs paging links (shared by the cluster through the database). */
  secret: string
  /** The $everything page cache. */
  redis?: Redis
  /** The cluster's rate-limit counts (api/http/rate-counts.ts). */
  rateCounts?: RateCounts
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'])

export function fhirRoutes(deps: FhirDeps) {
  const fixedBase = deps.config.publicBaseUrl ? `${deps.config.publicBaseUrl}/fhir` : undefined
  const xmlCache = new XmlRenderCache(deps.config.xmlRenderCacheBytes)
  const bulkStore = bulkFileStore(deps.repo.sql, deps.config)
  const limiters = surfaceLimiters(deps)
  const handle = ({ request, server }: { request: Request; server: Peer | null }) => handleFhir(request, fixedBase, deps, xmlCache, bulkStore, limiters, server)
  return new Elysia({ name: 'fhir' }).all('/fhir', handle, { parse: 'none' }).all('/fhir/*', handle, { parse: 'none' })
}

async function handleFhir(
  request: Request,
  fixedBase: string | undefined,
  deps: FhirDeps,
  xmlCache: XmlRenderCache,
  bulkStore: BulkFileStore,
  limiters: SurfaceLimiters,
  server: Peer | null,
): Promise<Response> {
  const url = new URL(request.url)
  const baseUrl = fixedBase ?? `${url.origin}/fhir`
  const ctx: FhirContext = { repo: deps.repo, config: deps.config, baseUrl, secret: deps.secret, jobs: deps.jobs, redis: deps.redis, client: request }
  const query = url.searchParams
  const accept = request.headers.get('accept')
  const requestId = request.headers.get('x-request-id') ?? crypto.randomUUID()
  const formatParam = query.get('_format')
  const ajax = request.headers.has('x-requested-with') || request.headers.has('origin')
  const html = wantsHtml(formatParam, accept, request.method, ajax)
  // The page shows the server's default encoding, JSON, unless `_format=html/xml` asks for XML.
  const format: Format = html ? (formatParam && htmlEncoding(formatParam)) || 'json' : responseFormat(formatParam, accept)
  // The HTML page is pretty unless asked otherwise (HAPI's ResponseHighlighterInterceptor).
  const pretty = html ? query.get('_pretty') !== 'false' : wantsPretty(query.get('_pretty'), accept, deps.config.defaultPretty)
  const head = request.method === 'HEAD'
  const page = { html, requestUrl: request.url }
  let rateHeaders: Record<string, string> | undefined
  try {
    if (!METHODS.has(request.method)) throw new AppError('not-allowed', `HTTP method ${request.method} is not supported`)
    if (request.url.includes('%00')) throw new AppError('invalid', 'The URL holds a NUL character (%00)')
    const path = url.pathname.slice('/fhir'.length).split('/').filter(Boolean).map(decodeSegment)
    const req: FhirRequest = {
      method: request.method as FhirMethod,
      path,
      query,
      headers: {
        ifMatch: request.headers.get('if-match') ?? undefined,
        ifNoneMatch: request.headers.get('if-none-match') ?? undefined,
        ifModifiedSince: request.headers.get('if-modified-since') ?? undefined,
        ifNoneExist: request.headers.get('if-none-exist') ?? undefined,
        prefer: request.headers.get('prefer') ?? undefined,
        contentType: request.headers.get('content-type') ?? undefined,
      },
    }
    const bulk = isBulkPath(path)
    let principal: Principal | undefined
    // The capability statement is public; anything else, a body included, waits for a valid key.
    const open = path[0] === 'metadata' && path.length === 1 && (request.method === 'GET' || request.method === 'HEAD')
    if (!deps.config.authDisabled && !open) {
      const known = authenticateLimited(deps.verifier, request, limiters, server)
      principal = known instanceof Promise ? await known : known
      if (limiters.fhir.enabled) {
        const d = limiters.fhir.take(principal.keyId)
        rateHeaders = limiters.fhir.headers(d)
        if (!d.allowed) throw tooManyRequests(limiters.fhir, d, `requests per ${deps.config.limits.rateWindowMs} ms per API key (FHIR_RATE_LIMIT)`)
      }
      if (!bulk) authorize(principal, requiredScope(req)) // bulk.ts checks its own scopes
    } else if (!deps.config.authDisabled && limiters.anonymous.enabled && !request.headers.has('authorization')) {
      const d = limiters.anonymous.take(limiters.addresses.of(server, request))
      if (!d.allowed) throw tooManyRequests(limiters.anonymous, d, anonymousWhat(deps))
    }
    if (path.length === 0 && req.method === 'POST') {
      req.bodyBytes = await readBodyBytes(request, deps.config.maxBodyBytes) // a Bundle for a worker: bundles.ts reads it
    } else if (request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'DELETE' && !bulkStreamsBody(path)) {
      const text = await readBody(request, deps.config.maxBodyBytes)
      // POST [type]/_search: form parameters join the query string's. https://hl7.org/fhir/R4/http.html#search
      if (path[path.length - 1] === '_search' && /^application\/x-www-form-urlencoded/i.test(request.headers.get('content-type') ?? '')) {
        for (const [k, v] of new URLSearchParams(text)) query.append(k, v)
      } else {
        req.body = parseBody(text, request.headers.get('content-type'))
      }
    }
    if (bulk) {
      const answer = await handleBulk(request, req, ctx, deps.jobs, bulkStore, principal)
      if (!(answer instanceof Response)) return render(answer, { format, pretty, head, requestId })
      answer.headers.set('x-request-id', requestId)
      return answer
    }
    const res =
      path.length === 0 && req.method === 'POST'
        ? await submitBundle(req, ctx, deps.jobs, principal)
        : path[0] === '$bundle-status' && path.length === 1 && req.method === 'GET'
          ? await bundleStatus(req, ctx, deps.jobs)
          : await route(req, ctx)
    return render(res, { format, pretty, head, requestId, xmlCache, extraHeaders: rateHeaders, ...page })
  } catch (err) {
    const appErr = toAppError(err)
    if (appErr.category === 'fault')
      log.error('request failed', { requestId, method: request.method, url: request.url, err: String((err as Error)?.stack ?? err) })
    const headers: Record<string, string> = { ...rateHeaders, ...(appErr.details.headers as Record<string, string> | undefined) }
    if (appErr.category === 'unauthorized') headers['www-authenticate'] = 'Bearer'
    const etag = appErr.details.etag as string | undefined
    const status = appErr.details.status === 429 ? 429 : appErr.status
    return render(
      { status, resource: errorOutcome(appErr), headers, etag, lastModified: appErr.details.lastModified as Date | undefined },
      { format, pretty, head, requestId, ...page },
    )
  }
}

/**
 * The request's principal; a request without a valid key counts against its address (ANONYMOUS_RATE_LIMIT),
 * and an address over it is refused before its key is even looked up.
 */
function authenticateLimited(verifier: ApiKeyVerifier, request: Request, limiters: SurfaceLimiters, server: Peer | null): Principal | Promise<Principal> {
  const { anonymous, addresses } = limiters
  if (!anonymous.enabled) return authenticateNow(verifier, request.headers.get('authorization'))
  // The address is costly to learn: looked at first only while traffic without a key is being counted.
  let address = anonymous.active ? addresses.of(server, request) : undefined
  const over = address === undefined ? undefined : anonymous.over(address)
  if (over) throw tooManyRequests(anonymous, over, 'requests without a valid API key per address (ANONYMOUS_RATE_LIMIT)')
  const refused = (err: unknown): never => {
    address ??= addresses.of(server, request)
    const d = anonymous.take(address)
    if (!d.allowed) throw tooManyRequests(anonymous, d, 'requests without a valid API key per address (ANONYMOUS_RATE_LIMIT)')
    throw err
  }
  try {
    const principal = authenticateNow(verifier, request.headers.get('authorization'))
    return principal instanceof Promise ? principal.catch(refused) : principal
  } catch (err) {
    return refused(err)
  }
}

function anonymousWhat(deps: FhirDeps): string {
  return `requests without an API key per ${deps.config.limits.rateWindowMs} ms per address (ANONYMOUS_RATE_LIMIT)`
}

async function readBody(request: Request, max: number): Promise<string> {
  return TEXT.decode(await readBodyBytes(request, max))
}

const TEXT = new TextDecoder()

/** The body as bytes, never decoded here (a Bundle goes on to Redis as it came); bytes that are not
 *  UTF-8 are refused rather than stored as U+FFFD (a native check, no decoding). */
async function readBodyBytes(request: Request, max: number): Promise<Uint8Array> {
  checkDeclaredLength(request, max)
  const bytes = await request.bytes()
  if (bytes.byteLength > max) throw tooLarge(max)
  if (!isUtf8(bytes)) throw new AppError('invalid', 'The request body is not valid UTF-8')
  return bytes
}

function checkDeclaredLength(request: Request, max: number): void {
  const declared = Number(request.headers.get('content-length') ?? 0)
  if (declared > max) throw new AppError('too-large', `Request body of ${declared} bytes exceeds the limit of ${max} bytes`)
}

function tooLarge(max: number): AppError {
  return new AppError('too-large', `Request body exceeds the limit of ${max} bytes`)
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    throw new AppError('invalid', `Invalid percent-encoding in the URL path: ${segment}`)
  }
}
