// Source tokens are stored encrypted: AES-256-GCM with a key from TOKEN_ENCRYPTION_KEY. Without it (a
// development setup) the key is derived from the database's server secret, and a warning says so.
// Stored form: `v1.<iv>.<ciphertext>.<tag>` in base64url.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { AppError } from '../errors'
import { log } from '../log'

export class TokenCipher {
  private constructor(private readonly key: Buffer) {}

  /** `configured` is TOKEN_ENCRYPTION_KEY (64 hex characters or 32 bytes in base64). */
  static from(configured: string | undefined, serverSecret: string): TokenCipher {
    if (configured) {
      const key = /^[0-9a-fA-F]{64}$/.test(configured) ? Buffer.from(configured, 'hex') : Buffer.from(configured, 'base64')
      if (key.length !== 32) throw new AppError('fault', 'TOKEN_ENCRYPTION_KEY must be 32 bytes (64 hex characters or base64)')
      return new TokenCipher(key)
    }
    warnOnce()
    return new TokenCipher(Buffer.from(hkdfSync('sha256', serverSecret, 'fhir-platform', 'source-token-encryption', 32)))
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', this.key, iv)
    const data = Buffer.concat([c.update(plain, 'utf8'), c.final()])
    return ['v1', iv.toString('base64url'), data.toString('base64url'), c.getAuthTag().toString('base64url')].join('.')
  }

  decrypt(stored: string): string {
    const [v, iv, data, tag] = stored.split('.')
    if (v !== 'v1' || !iv || data === undefined || !tag) throw new AppError('fault', 'stored token has an unknown format')
    const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'))
    d.setAuthTag(Buffer.from(tag, 'base64url'))
    try {
      return Buffer.concat([d.update(Buffer.from(data, 'base64url')), d.final()]).toString('utf8')
    } catch {
      throw new AppError('fault', 'stored token cannot be decrypted (was TOKEN_ENCRYPTION_KEY changed?)')
    }
  }
}

let warned = false
function warnOnce(): void {
  if (warned) return
  warned = true
  log.warn('TOKEN_ENCRYPTION_KEY is not set: source tokens are encrypted with a key derived from the database secret; set it in production')
}
