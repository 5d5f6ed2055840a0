// Token requests to the source: the authorization-code exchange and refresh, as a confidential client
// (client_secret through HTTP Basic) or a public one (client_id in the body), through the outbound
// client (no redirect followed: a token request carries the client secret and the code).
// https://hl7.org/fhir/smart-app-launch/STU2/app-launch.html#obtain-access-token
import { AppError } from '../errors'
import type { Outbound } from '../net/client'
import type { OutboundResponse } from '../net/response'

export interface SmartClient {
  tokenEndpoint: string
  clientId: string
  /** Absent for a public client. */
  clientSecret?: string | null
}

export interface TokenSet {
  accessToken: string
  refreshToken?: string
  /** When the access token stops working (absent: the source did not say). */
  expiresAt?: Date
  scope?: string
  /** The launch context: the patient's id at the source. */
  patient?: string
}

export function exchangeCode(outbound: Outbound, client: SmartClient, code: string, redirectUri: string, codeVerifier: string): Promise<TokenSet> {
  return tokenRequest(outbound, client, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: codeVerifier })
}

/** A refresh keeps the previous refresh token when the source does not issue a new one. */
export async function refreshTokens(outbound: Outbound, client: SmartClient, refreshToken: string): Promise<TokenSet> {
  const t = await tokenRequest(outbound, client, { grant_type: 'refresh_token', refresh_token: refreshToken })
  return { ...t, refreshToken: t.refreshToken ?? refreshToken }
}

async function tokenRequest(outbound: Outbound, client: SmartClient, params: Record<string, string>): Promise<TokenSet> {
  const body = new URLSearchParams(params)
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }
  // https://www.rfc-editor.org/rfc/rfc6749#section-2.3.1: client_id and secret form-encoded, then Basic.
  if (client.clientSecret) headers.authorization = `Basic ${btoa(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`)}`
  else body.set('client_id', client.clientId)
  let res: OutboundResponse
  let json: any
  try {
    res = await outbound.fetch(client.tokenEndpoint, { method: 'POST', headers, body: body.toString() })
    json = await res.json().catch(() => undefined)
  } catch (err) {
    throw tokenError(`token endpoint: ${(err as Error).message}`, undefined)
  }
  if (!res.ok || typeof json?.access_token !== 'string') {
    throw tokenError(`token request failed with ${res.status}${json?.error ? `: ${json.error}` : ''}`, json?.error)
  }
  const expiresIn = Number(json.expires_in)
  return {
    accessToken: json.access_token,
    refreshToken: typeof json.refresh_token === 'string' ? json.refresh_token : undefined,
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(Date.now() + expiresIn * 1000) : undefined,
    scope: typeof json.scope === 'string' ? json.scope : undefined,
    patient: typeof json.patient === 'string' ? json.patient : undefined,
  }
}

function tokenError(message: string, oauthError: string | undefined): AppError {
  return new AppError('fault', message, { details: { code: 'token_exchange_failed', oauthError } })
}
