// Authenticated reads from a source FHIR server with the connection's access token. The token is
// refreshed before it expires and once more when the source answers 401; a refresh that fails throws
// RefreshFailedError (the connection then needs the patient to reconnect).
import { AppError } from '../errors'
import { refreshTokens, type SmartClient, type TokenSet } from './token-client'

export class RefreshFailedError extends Error {}

export interface SourceSessionOptions {
  baseUrl: string
  tokens: TokenSet
  /** For refresh; absent when the token endpoint is unknown. */
  client?: SmartClient
  /** Persists refreshed tokens (encrypted at rest by the caller). */
  onRefresh: (tokens: TokenSet) => Promise<void>
}

const TIMEOUT_MS = 30_000
/** Refresh this long before the stated expiry. */
const EXPIRY_MARGIN_MS = 10_000

export class SourceSession {
  readonly baseUrl: string
  private tokens: TokenSet
  refreshes = 0

  constructor(private readonly opts: SourceSessionOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '')
    this.tokens = opts.tokens
  }

  /** GET a URL (absolute, or relative to the base) as JSON. */
  async getJson(pathOrUrl: string): Promise<any> {
    const url = /^https?:\/\//.test(pathOrUrl) ? pathOrUrl : `${this.baseUrl}/${pathOrUrl.replace(/^\//, '')}`
    if (this.tokens.expiresAt && this.tokens.expiresAt.getTime() - EXPIRY_MARGIN_MS < Date.now()) await this.refresh()
    let res = await this.get(url)
    if (res.status === 401) {
      await this.refresh()
      res = await this.get(url)
    }
    if (!res.ok) {
      const text = await res.text().catch(() => '')
      throw new AppError('fault', `source answered ${res.status} to GET ${url}: ${text.slice(0, 300)}`, { details: { code: 'fhir_error', status: res.status } })
    }
    return res.json()
  }

  private get(url: string): Promise<Response> {
    return fetch(url, {
      headers: { authorization: `Bearer ${this.tokens.accessToken}`, accept: 'application/fhir+json' },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    })
  }

  private async refresh(): Promise<void> {
    const { client } = this.opts
    if (!client || !this.tokens.refreshToken) throw new RefreshFailedError('the access token expired and there is no refresh token')
    let next: TokenSet
    try {
      next = await refreshTokens(client, this.tokens.refreshToken)
    } catch (err) {
      throw new RefreshFailedError((err as Error).message)
    }
    this.tokens = { ...next, patient: next.patient ?? this.tokens.patient }
    this.refreshes++
    await this.opts.onRefresh(this.tokens)
  }
}
