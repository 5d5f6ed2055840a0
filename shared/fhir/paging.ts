// Paging links any API node can serve: the `_getpages` value is a self-contained token (the query and a
// snapshot instant or cursor), not a server-side cache entry, so no sticky sessions are needed. Tokens
// are signed with the cluster's shared secret: an altered or foreign token is 410, like an unknown one.
import { AppError } from '../errors'

export interface PageToken {
  /** What is paged: 'history' now; search adds its own kinds. */
  kind: string
  /** Everything needed to re-run the query. */
  q: Record<string, unknown>
}

export function encodePageToken(token: PageToken, secret: string): string {
  const body = Buffer.from(JSON.stringify(token)).toString('base64url')
  return `${body}.${sign(body, secret)}`
}

export function decodePageToken(value: string, secret: string): PageToken {
  const dot = value.lastIndexOf('.')
  if (dot > 0 && sign(value.slice(0, dot), secret) === value.slice(dot + 1)) {
    try {
      const token = JSON.parse(Buffer.from(value.slice(0, dot), 'base64url').toString('utf8'))
      if (token && typeof token.kind === 'string' && token.q && typeof token.q === 'object') return token
    } catch {}
  }
  throw unknownSearchId(value)
}

/** 410 HAPI-0417: a paging link that is not (or no longer) one of ours. */
export function unknownSearchId(value: string): AppError {
  return new AppError('gone', `HAPI-0417: Search ID "${value.slice(0, 40)}" does not exist and may have expired`)
}

function sign(body: string, secret: string): string {
  return new Bun.CryptoHasher('sha256', secret).update(body).digest('base64url').slice(0, 22)
}

export function pageLink(
  baseUrl: string,
  secret: string,
  token: PageToken,
  offset: number,
  count: number,
  bundleType: string,
  extra?: URLSearchParams,
): string {
  const q = new URLSearchParams({ _getpages: encodePageToken(token, secret), _getpagesoffset: String(offset), _count: String(count), _bundletype: bundleType })
  if (extra) for (const [k, v] of extra) q.append(k, v)
  return `${baseUrl}?${q}`
}

/** `_count` clamped to the configured maximum; default when absent. */
export function pageSize(query: URLSearchParams, dflt: number, max: number): number {
  const raw = query.get('_count')
  return raw === null ? dflt : parseCount(raw, max)
}

/** A `_count` value: a whole number of digits, clamped to `max`. */
export function parseCount(value: string, max: number): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new AppError('invalid', `Invalid _count value: "${value}"`)
  return Math.min(n, max)
}

/** The `self` link of a Bundle answering `req`: the request's own URL on the FHIR base. */
export function selfUrl(req: { path: string[]; query: URLSearchParams }, baseUrl: string): string {
  const qs = req.query.toString()
  return `${baseUrl}${req.path.length ? `/${req.path.join('/')}` : ''}${qs ? `?${qs}` : ''}`
}
