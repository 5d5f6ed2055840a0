// Saved responses of POSTs sent with an Idempotency-Key (Stripe's semantics,
// https://docs.stripe.com/api/idempotent_requests): the first request with a key reserves it and its
// response is saved; the same key with the same request replays that response for 24 hours; the same
// key with another request, or while the first is still running, is 409 idempotency_error. A saved
// answer is sealed (it may hold a secret shown once, such as a webhook signing secret).
import type { Sql } from '../db/client'
import type { SecretCipher } from '../secrets/cipher'
import { apiError } from './api-error'

export const IDEMPOTENCY_TTL_HOURS = 24

export type IdempotencyBegin = { kind: 'new' } | { kind: 'replay'; status: number; body: string }

export function checkIdempotencyKey(key: string): string {
  if (key.length < 1 || key.length > 255) throw apiError('invalid', 'invalid_data', 'Idempotency-Key must be 1-255 characters', 'Idempotency-Key')
  return key
}

export function requestHash(method: string, path: string, body: string): string {
  return new Bun.CryptoHasher('sha256').update(`${method} ${path}\n${body}`).digest('hex')
}

/** Reserves the key for this request, or answers the saved response to replay. */
export async function beginIdempotent(sql: Sql, cipher: SecretCipher, organizationId: string, key: string, hash: string): Promise<IdempotencyBegin> {
  // A reservation older than the TTL is taken over as if new.
  const [won] = await sql`
    insert into idempotency_key (organization_id, key, request_hash) values (${organizationId}, ${key}, ${hash})
    on conflict (organization_id, key) do update set request_hash = excluded.request_hash, status = null, response = null, created_at = now()
      where idempotency_key.created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
    returning 1`
  if (won) return { kind: 'new' }
  const [row] = await sql<{ request_hash: string; status: number | null; response: string | null }[]>`
    select request_hash, status, response from idempotency_key where organization_id = ${organizationId} and key = ${key}`
  if (!row) return beginIdempotent(sql, cipher, organizationId, key, hash) // released meanwhile
  if (row.request_hash !== hash)
    throw apiError(
      'conflict',
      'idempotency_key_reused',
      `Idempotency-Key '${key}' was used with another request; use a new key for a new request`,
      'Idempotency-Key',
    )
  if (row.status === null || row.response === null)
    throw apiError('conflict', 'idempotency_key_in_use', `A request with Idempotency-Key '${key}' is still being processed; retry later`, 'Idempotency-Key')
  return { kind: 'replay', status: row.status, body: cipher.open(row.response) }
}

export async function saveIdempotent(sql: Sql, cipher: SecretCipher, organizationId: string, key: string, status: number, body: string): Promise<void> {
  await sql`update idempotency_key set status = ${status}, response = ${cipher.seal(body)} where organization_id = ${organizationId} and key = ${key}`
}

/** Frees the key (the request failed validation and ran nothing): a retry may use it again. */
export async function releaseIdempotent(sql: Sql, organizationId: string, key: string): Promise<void> {
  await sql`delete from idempotency_key where organization_id = ${organizationId} and key = ${key} and status is null`
}

/** Drops saved responses past the TTL (run by the flow-expiry job). */
export async function purgeIdempotencyKeys(sql: Sql): Promise<number> {
  const rows = await sql`delete from idempotency_key where created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS}) returning 1`
  return rows.length
}
