// Webhook signatures: `Medblocks-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "${t}.${rawBody}">`
// with the endpoint's secret; receivers compare in constant time and reject timestamps more than five
// minutes away. ../shared/notes/patient-api.md §6.2 (Signature).
import { createHmac, timingSafeEqual } from 'node:crypto'

export const SIGNATURE_HEADER = 'Medblocks-Signature'
export const TOLERANCE_SECONDS = 300

export function signatureHeader(secret: string, rawBody: string, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${hmac(secret, `${t}.${rawBody}`)}`
}

/** True when one of the header's v1 signatures matches the body and its timestamp is within tolerance. */
export function verifySignature(secret: string, header: string | null | undefined, rawBody: string, now = Math.floor(Date.now() / 1000)): boolean {
  if (!header) return false
  const parts = header.split(',').map((p) => p.trim().split('='))
  const t = Number(parts.find(([k]) => k === 't')?.[1])
  if (!Number.isInteger(t) || Math.abs(now - t) > TOLERANCE_SECONDS) return false
  const expected = Buffer.from(hmac(secret, `${t}.${rawBody}`), 'hex')
  return parts.some(([k, v]) => {
    if (k !== 'v1' || !v || !/^[0-9a-f]{64}$/.test(v)) return false
    return timingSafeEqual(Buffer.from(v, 'hex'), expected)
  })
}

function hmac(secret: string, data: string): string {
  return createHmac('sha256', secret).update(data).digest('hex')
}
