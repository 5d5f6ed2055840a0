// PKCE with S256: a random verifier and its SHA-256 challenge. https://www.rfc-editor.org/rfc/rfc7636#section-4
import { createHash, randomBytes } from 'node:crypto'

export interface Pkce {
  verifier: string
  challenge: string
}

export function createPkce(): Pkce {
  // 32 random bytes -> 43 base64url characters (the RFC's minimum length, 256 bits of entropy).
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: s256(verifier) }
}

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url')
}
