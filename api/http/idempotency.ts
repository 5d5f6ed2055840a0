// Idempotency-Key on POST (Stripe's semantics; storage in shared/patients/idempotency.ts): replays the
// saved response for the same key and request, marked `Idempotent-Replayed: true`. Responses to
// requests that failed validation (400) or on the server (5xx) are not saved, so a retry may reuse the key.
import type { Sql } from '../../shared/db/client'
import type { SecretCipher } from '../../shared/secrets/cipher'
import { beginIdempotent, checkIdempotencyKey, releaseIdempotent, requestHash, saveIdempotent } from '../../shared/patients/idempotency'

export interface Reply {
  status: number
  body: string
  headers?: Record<string, string>
}

/** Runs `run` once per (organization, Idempotency-Key); without the header, just runs it. */
export async function idempotent(
  sql: Sql,
  cipher: SecretCipher,
  organizationId: string,
  request: Request,
  path: string,
  bodyText: string,
  run: () => Promise<Reply>,
): Promise<Reply> {
  const header = request.headers.get('idempotency-key')
  if (header === null || request.method !== 'POST') return run()
  const key = checkIdempotencyKey(header)
  const begun = await beginIdempotent(sql, cipher, organizationId, key, requestHash(request.method, path, bodyText))
  if (begun.kind === 'replay') return { status: begun.status, body: begun.body, headers: { 'idempotent-replayed': 'true' } }
  let reply: Reply
  try {
    reply = await run()
  } catch (err) {
    await releaseIdempotent(sql, organizationId, key)
    throw err
  }
  if (reply.status === 400 || reply.status >= 500) await releaseIdempotent(sql, organizationId, key)
  else await saveIdempotent(sql, cipher, organizationId, key, reply.status, reply.body)
  return reply
}
