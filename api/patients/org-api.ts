// The edge of every organization-authenticated endpoint (patient API, and the connect flow's webhooks):
// request id -> API key of an organization -> Version -> rate limit -> JSON body -> Idempotency-Key
// (POST) -> handler -> JSON answer; any error becomes the envelope (envelope.ts). Every answer carries
// X-Request-Id. Handlers get values (OrgCall), never the framework's context.
import { isUtf8 } from 'node:buffer'
import type { AppDeps } from '../deps'
import { pageUrl } from '../../shared/connect/page-token'
import { AppError } from '../../shared/errors'
import type { FlowPageUrl } from '../../shared/patients/flows'
import { apiError, badRequest } from '../../shared/patients/api-error'
import { type OrgPrincipal, OrgKeyVerifier } from '../../shared/patients/org-api-keys'
import { type ApiVersion, requestVersion } from '../../shared/patients/versions'
import { idempotent, type Reply } from '../http/idempotency'
import { RateLimiter, type SurfaceLimiters, surfaceLimiters, tooManyRequests } from '../http/rate-limit'
import type { Peer } from '../../shared/net/client-address'
import { requestIdOf } from '../http/request-id'
import { bodyResponse } from '../http/response'
import { errorReply } from './envelope'
import { refuseNulBytes } from './no-nul'

/** Largest JSON body the patient API accepts (413 payload_too_large beyond). */
export const MAX_JSON_BODY_BYTES = 1024 * 1024

/**
 * Largest request head (header names and values) the patient API reads: 431 headers_too_large, in the
 * envelope, beyond. Below the runtime's own parser limit (Bun: 16 KiB, answered before any app code
 * runs, as a bare 431), so that an oversized head gets an answer a client can read and log.
 */
export const MAX_HEADER_BYTES = 8 * 1024

export interface OrgCall {
  request: Request
  url: URL
  requestId: string
  principal: OrgPrincipal
  version: ApiVersion
  params: Record<string, string>
  /** The parsed JSON body of POST/PUT/PATCH (undefined for other methods). */
  body: unknown
  /** Base URL clients see (PUBLIC_BASE_URL, else the server's own host and port; never the Host header), no trailing slash. */
  publicBaseUrl: string
  /** The hosted page of a flow, with its token (connect/page-token.ts). */
  flowPageUrl: FlowPageUrl
}

/** What a handler answers: a body (status 200) or an explicit status, body and headers. */
export interface OrgResult {
  status: number
  body: unknown
  headers?: Record<string, string>
}

export type OrgHandler = (call: OrgCall) => Promise<OrgResult>

export interface OrgApi {
  /** An Elysia handler (`({request, params}) => Response`) running `fn` behind the org edge. */
  handle(fn: OrgHandler): (ctx: { request: Request; params?: Record<string, string>; server?: Peer | null }) => Promise<Response>
  verifier: OrgKeyVerifier
}

export const ok = (body: unknown, status = 200): OrgResult => ({ status, body })

const shared = new WeakMap<AppDeps, OrgApi>()

/** The org edge of an app (one per AppDeps, so every plugin shares its key cache and rate limiter). */
export function orgApi(deps: AppDeps): OrgApi {
  let api = shared.get(deps)
  if (!api) shared.set(deps, (api = createOrgApi(deps)))
  return api
}

function createOrgApi(deps: AppDeps): OrgApi {
  const verifier = new OrgKeyVerifier(deps.sql, deps.config.keyCacheMs)
  const limiter = new RateLimiter({
    limit: deps.config.patientApiRateLimit,
    windowMs: deps.config.patientApiRateWindowMs,
    prefix: deps.config.queuePrefix,
    counts: deps.rateCounts,
  })
  const limiters = surfaceLimiters(deps)
  return {
    verifier,
    handle:
      (fn) =>
      async ({ request, params, server }) => {
        const requestId = requestIdOf(request)
        let rateHeaders: Record<string, string> | undefined
        try {
          const url = new URL(request.url)
          refuseLargeHead(request.headers)
          const principal = await authenticateLimited(verifier, request, limiters, server)
          const version = requestVersion(request.headers.get('version'), principal.version)
          if (limiter.enabled) {
            const rate = limiter.take(principal.keyId)
            rateHeaders = limiter.headers(rate)
            if (!rate.allowed) throw tooManyRequests(limiter, rate, `per ${deps.config.patientApiRateWindowMs} ms per API key`)
          }
          const text = hasBody(request.method) ? await readBody(request) : ''
          const body = hasBody(request.method) ? parseJson(text) : undefined
          refuseNulBytes(params ?? {}, url, body)
          const call: OrgCall = {
            request,
            url,
            requestId,
            principal,
            version,
            params: params ?? {},
            body,
            publicBaseUrl: deps.publicBase(),
            flowPageUrl: (flowId) => pageUrl(deps.cipher, deps.publicBase(), flowId),
          }
          const run = async (): Promise<Reply> => {
            try {
              const r = await fn(call)
              return { status: r.status, body: JSON.stringify(r.body), headers: r.headers }
            } catch (err) {
              return errorAsReply(err, requestId, deps.publicBase())
            }
          }
          const reply = await idempotent(deps.sql, deps.cipher, principal.organizationId, request, url.pathname, text, run)
          return respond(rateHeaders ? { ...reply, headers: { ...reply.headers, ...rateHeaders } } : reply, requestId)
        } catch (err) {
          const reply = errorAsReply(err, requestId, deps.publicBase())
          return respond(rateHeaders ? { ...reply, headers: { ...rateHeaders, ...reply.headers } } : reply, requestId)
        }
      },
  }
}

/** authenticateOrg; a request without a valid key counts against its address (ANONYMOUS_RATE_LIMIT). */
async function authenticateLimited(verifier: OrgKeyVerifier, request: Request, limiters: SurfaceLimiters, server: Peer | null | undefined) {
  const { anonymous, addresses } = limiters
  if (!anonymous.enabled) return authenticateOrg(verifier, request.headers.get('authorization'))
  // The address is costly to learn: looked at first only while traffic without a key is being counted.
  let address = anonymous.active ? addresses.of(server, request) : undefined
  const over = address === undefined ? undefined : anonymous.over(address)
  const what = 'requests without a valid API key per address (ANONYMOUS_RATE_LIMIT)'
  if (over) throw tooManyRequests(anonymous, over, what)
  try {
    return await authenticateOrg(verifier, request.headers.get('authorization'))
  } catch (err) {
    address ??= addresses.of(server, request)
    const d = anonymous.take(address)
    if (!d.allowed) throw tooManyRequests(anonymous, d, what)
    throw err
  }
}

/** A bearer key of an organization -> its principal. 401 missing_api_key / invalid_api_key. */
export async function authenticateOrg(verifier: OrgKeyVerifier, authorization: string | null): Promise<OrgPrincipal> {
  const m = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null
  if (!m) throw apiError('unauthorized', 'missing_api_key', 'Missing API key: send Authorization: Bearer <API key>')
  const principal = await verifier.verify(m[1])
  if (!principal) throw apiError('unauthorized', 'invalid_api_key', 'API key invalid')
  return principal
}

function errorAsReply(err: unknown, requestId: string, publicBase: string): Reply {
  const { status, envelope } = errorReply(err, requestId, publicBase)
  const headers: Record<string, string> = {}
  const retryAfter = err instanceof AppError ? (err.details.retryAfter as number | undefined) : undefined
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter)
  if (err instanceof AppError && err.details.headers) Object.assign(headers, err.details.headers)
  if (status === 401) headers['www-authenticate'] = 'Bearer'
  return { status, body: JSON.stringify(envelope), headers }
}

/** The envelope as a Response, for errors raised outside a handler (e.g. admin endpoints). */
export function errorResponse(err: unknown, requestId: string, publicBase: string): Response {
  return respond(errorAsReply(err, requestId, publicBase), requestId)
}

export function respond(reply: Reply, requestId: string): Response {
  return bodyResponse(reply.body, {
    status: reply.status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, ...reply.headers },
  })
}

function refuseLargeHead(headers: Headers): void {
  let bytes = 0
  for (const [name, value] of headers) bytes += name.length + value.length + 4
  if (bytes > MAX_HEADER_BYTES)
    throw new AppError('too-large', `Request headers exceed the limit of ${MAX_HEADER_BYTES} bytes`, { details: { code: 'headers_too_large', status: 431 } })
}

const hasBody = (method: string) => method === 'POST' || method === 'PUT' || method === 'PATCH'

async function readBody(request: Request): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? 0)
  if (declared > MAX_JSON_BODY_BYTES) throw tooLarge()
  const bytes = await request.bytes()
  if (bytes.byteLength > MAX_JSON_BODY_BYTES) throw tooLarge()
  if (!isUtf8(bytes)) throw badRequest('The request body is not valid UTF-8')
  return new TextDecoder().decode(bytes)
}

const tooLarge = () => apiError('too-large', 'payload_too_large', `Request body exceeds the limit of ${MAX_JSON_BODY_BYTES} bytes`)

/** The JSON body; an empty body is an empty object. */
export function parseJson(text: string): unknown {
  if (text.trim() === '') return {}
  try {
    return JSON.parse(text)
  } catch {
    throw badRequest('The request body is not valid JSON')
  }
}
