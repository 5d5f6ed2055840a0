// Authenticated reads from a source FHIR server with the connection's access token, through the
// outbound client. The token goes only to the source's own origin (scheme, host and port of its
// fhir_base_url): a link elsewhere is refused, never followed with or without it. The token is
// refreshed before it expires and once more when the source answers 401; a refresh that fails throws
// RefreshFailedError (the connection then needs the patient to reconnect).
import { AppError } from '../errors'
import type { Outbound } from '../net/client'
import type { OutboundResponse } from '../net/response'
import { refreshTokens, type SmartClient, type TokenSet } from './token-client'

export class RefreshFailedError extends Error {}

export interface SourceSessionOptions {
  baseUrl: string
  outbound: Outbound
  tokens: TokenSet
  /** For refresh; absent when the token endpoint is unknown. */
  client?: SmartClient
  /** Persists refreshed tokens (sealed at rest by the caller). */
  onRefresh: (tokens: TokenSet) => Promise<void>
}

/** Refresh this long before the stated expiry. */
const EXPIRY_MARGIN_MS = 10_000

export class SourceSession {
  readonly baseUrl: string
  /** Where the access token may go. */
  readonly origin: string
  private tokens: TokenSet
  refreshes = 0

  constructor(private readonly opts: SourceSessionOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '')
    this.origin = new URL(this.baseUrl).origin
    this.tokens = opts.tokens
  }

  /** The absolute URL of a path relative to the base, or of an absolute URL (which must be on the source's origin). */
  resolve(pathOrUrl: string): string {
    if (!/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(pathOrUrl)) return `${this.baseUrl}/${pathOrUrl.replace(/^\//, '')}`
    let url: URL
    try {
      url = new URL(pathOrUrl)
    } catch {
      throw sourceError(`the source gave an invalid link: ${pathOrUrl.slice(0, 200)}`)
    }
    if (url.origin !== this.origin)
      throw sourceError(
        `the source linked to ${url.origin}, another origin than its own (${this.origin}); the access token goes only to the source, so the link is not followed`,
      )
    return url.toString()
  }

  /** GET a URL (absolute on the source's origin, or relative to the base) as JSON. */
  async getJson(pathOrUrl: string): Promise<any> {
    const url = this.resolve(pathOrUrl)
    if (this.tokens.expiresAt && this.tokens.expiresAt.getTime() - EXPIRY_MARGIN_MS < Date.now()) await this.refresh()
    let res = await this.get(url)
    if (res.status === 401) {
      await res.discard()
      await this.refresh()
      res = await this.get(url)
    }
    if (!res.ok) {
      const text = await res.excerpt(300)
      throw new AppError('fault', `source answered ${res.status} to GET ${url}: ${text}`, { details: { code: 'fhir_error', status: res.status } })
    }
    return res.json()
  }

  private get(url: string): Promise<OutboundResponse> {
    // A redirect to another origin is fetched without the token (the client drops it).
    return this.opts.outbound.fetch(url, {
      headers: { authorization: `Bearer ${this.tokens.accessToken}`, accept: 'application/fhir+json' },
      followRedirects: 3,
    })
  }

  private async refresh(): Promise<void> {
    const { client } = this.opts
    if (!client || !this.tokens.refreshToken) throw new RefreshFailedError('the access token expired and there is no refresh token')
    let next: TokenSet
    try {
      next = await refreshTokens(this.opts.outbound, client, this.tokens.refreshToken)
    } catch (err) {
      throw new RefreshFailedError((err as Error).message)
    }
    this.tokens = { ...next, patient: next.patient ?? this.tokens.patient }
    this.refreshes++
    await this.opts.onRefresh(this.tokens)
  }
}

export function sourceError(message: string): AppError {
  return new AppError('fault', message, { details: { code: 'fhir_error' } })
}
