// The source tokens of a connection, sealed at rest (../secrets/cipher.ts), and the patient's id at the
// source. Columns of `connection` added by migration 0009.
import type { Sql } from '../db/client'
import type { SecretCipher } from '../secrets/cipher'
import type { TokenSet } from './token-client'

export async function saveTokens(sql: Sql, cipher: SecretCipher, connectionId: string, t: TokenSet, tokenEndpoint?: string): Promise<void> {
  await sql`
    update connection set
      access_token = ${cipher.seal(t.accessToken)},
      refresh_token = ${t.refreshToken ? cipher.seal(t.refreshToken) : null},
      token_expires_at = ${t.expiresAt ?? null},
      token_endpoint = coalesce(${tokenEndpoint ?? null}, token_endpoint),
      source_patient_id = coalesce(${t.patient ?? null}, source_patient_id),
      updated_at = date_trunc('milliseconds', now())
    where id = ${connectionId}`
}

/** Forgets the tokens (disconnect). */
export async function clearTokens(sql: Sql, connectionId: string): Promise<void> {
  await sql`update connection set access_token = null, refresh_token = null, token_expires_at = null where id = ${connectionId}`
}

export interface StoredTokens {
  tokens: TokenSet
  tokenEndpoint: string | null
}

export function readTokens(
  cipher: SecretCipher,
  row: {
    access_token: string | null
    refresh_token: string | null
    token_expires_at: Date | null
    token_endpoint: string | null
    source_patient_id: string | null
  },
): StoredTokens | undefined {
  if (!row.access_token) return undefined
  return {
    tokens: {
      accessToken: cipher.open(row.access_token),
      refreshToken: row.refresh_token ? cipher.open(row.refresh_token) : undefined,
      expiresAt: row.token_expires_at ?? undefined,
      patient: row.source_patient_id ?? undefined,
    },
    tokenEndpoint: row.token_endpoint,
  }
}
