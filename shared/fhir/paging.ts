// Paging links any API node can serve: the `_getpages` value is a self-contained token (the query and a
// snapshot instant), not a server-side cache entry, so no sticky sessions are needed.
import { AppError } from '../errors'

export interface PageToken {
  /** What is paged: 'history' now; search adds its own kinds. */
  kind: string
  /** Everything needed to re-run the query. */
  q: Record<string, unknown>
}

export function encodePageToken(token: PageToken): string {
  return Buffer.from(JSON.stringify(token)).toString('base64url')
}

export function decodePageToken(value: string): PageToken {
  try {
    const token = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))
    if (token && typeof token.kind === 'string' && token.q && typeof token.q === 'object') return token
  } catch {}
  throw new AppError('gone', `HAPI-0417: Search ID "${value}" does not exist and may have expired`)
}

export function pageLink(baseUrl: string, token: PageToken, offset: number, count: number, bundleType: string, extra?: URLSearchParams): string {
  const q = new URLSearchParams({ _getpages: encodePageToken(token), _getpagesoffset: String(offset), _count: String(count), _bundletype: bundleType })
  if (extra) for (const [k, v] of extra) q.append(k, v)
  return `${baseUrl}?${q}`
}

/** `_count` clamped to the configured maximum; default when absent. */
export function pageSize(query: URLSearchParams, dflt: number, max: number): number {
  const raw = query.get('_count')
  if (raw === null) return dflt
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 0) throw new AppError('invalid', `Invalid _count value: "${raw}"`)
  return Math.min(n, max)
}
