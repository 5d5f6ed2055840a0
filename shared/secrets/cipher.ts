// Every secret stored at rest (source tokens, SMART client secrets, PKCE verifiers, webhook signing
// secrets, saved idempotent answers) is sealed with AES-256-GCM under a key from keys.ts. Stored form:
// `v2.<key id>.<iv>.<ciphertext>.<tag>` (base64url), so a retired key still opens what it sealed and
// `bun run secrets rotate` finds what is not under the current key yet. The earlier form
// `v1.<iv>.<ciphertext>.<tag>` (no key id) is opened by trying each key.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import { AppError } from '../errors'
import type { KeySet, SecretKey } from './keys'

export class SecretCipher {
  private readonly byId: Map<string, SecretKey>
  /** Subkeys of sign/verify, derived once per key and purpose. */
  private readonly macKeys = new Map<string, Buffer>()

  constructor(
    readonly keys: KeySet,
    /** Keys of the `v1` form only (the one-time migration of stored-secrets.ts). */
    private readonly legacy: Buffer[] = [],
  ) {
    this.byId = new Map([keys.current, ...keys.retired].map((k) => [k.id, k]))
  }

  get currentKeyId(): string {
    return this.keys.current.id
  }

  withLegacyKeys(legacy: Buffer[]): SecretCipher {
    return new SecretCipher(this.keys, legacy)
  }

  seal(plain: string): string {
    const { id, key } = this.keys.current
    const iv = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', key, iv)
    c.setAAD(Buffer.from(id))
    const data = Buffer.concat([c.update(plain, 'utf8'), c.final()])
    return ['v2', id, iv.toString('base64url'), data.toString('base64url'), c.getAuthTag().toString('base64url')].join('.')
  }

  open(stored: string): string {
    const parts = stored.split('.')
    if (parts[0] === 'v2' && parts.length === 5) {
      const key = this.byId.get(parts[1])
      if (!key) throw unreadable(`it was sealed with key ${parts[1]}, which is neither TOKEN_ENCRYPTION_KEY nor one of TOKEN_ENCRYPTION_RETIRED_KEYS`)
      const plain = decrypt(key.key, parts[2], parts[3], parts[4], Buffer.from(key.id))
      if (plain === undefined) throw unreadable('it does not open with its key (altered?)')
      return plain
    }
    if (parts[0] === 'v1' && parts.length === 4) {
      for (const key of [...this.byId.values()].map((k) => k.key).concat(this.legacy)) {
        const plain = decrypt(key, parts[1], parts[2], parts[3])
        if (plain !== undefined) return plain
      }
      throw unreadable('it is in the earlier v1 form and no configured key opens it')
    }
    throw unreadable('it is not in a sealed form')
  }

  /** Sealed (either form). */
  static isSealed(stored: string): boolean {
    return /^v2\.[^.]+\.[^.]*\.[^.]*\.[^.]*$/.test(stored) || /^v1\.[^.]*\.[^.]*\.[^.]*$/.test(stored)
  }

  /** Sealed under the current key. */
  isCurrent(stored: string): boolean {
    return stored.startsWith(`v2.${this.keys.current.id}.`)
  }

  /** A keyed digest of `data` for `purpose` under the current key (for values the server recomputes, never stores). */
  sign(purpose: string, data: string): string {
    return mac(this.macKey(this.keys.current, purpose), data)
  }

  /** True when `value` is the digest of `data` under the current or a retired key (constant time). */
  verify(purpose: string, data: string, value: string): boolean {
    const given = Buffer.from(value)
    let ok = false
    for (const k of this.byId.values()) {
      const want = Buffer.from(mac(this.macKey(k, purpose), data))
      ok = (want.length === given.length && timingSafeEqual(want, given)) || ok
    }
    return ok
  }

  /** HKDF subkey per purpose, so that no key serves two purposes. */
  private macKey(k: SecretKey, purpose: string): Buffer {
    const name = `${k.id}:${purpose}`
    let sub = this.macKeys.get(name)
    if (!sub) this.macKeys.set(name, (sub = Buffer.from(hkdfSync('sha256', k.key, 'fhir-platform', `mac:${purpose}`, 32))))
    return sub
  }
}

function decrypt(key: Buffer, iv: string, data: string, tag: string, aad?: Buffer): string | undefined {
  try {
    const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
    if (aad) d.setAAD(aad)
    d.setAuthTag(Buffer.from(tag, 'base64url'))
    return Buffer.concat([d.update(Buffer.from(data, 'base64url')), d.final()]).toString('utf8')
  } catch {
    return undefined
  }
}

/** HMAC-SHA256, 32 base64url characters (192 bits). Bun's hasher: half the time of node:crypto's createHmac. */
function mac(key: Buffer, data: string): string {
  return new Bun.CryptoHasher('sha256', key).update(data).digest('base64url').slice(0, 32)
}

function unreadable(why: string): AppError {
  return new AppError('fault', `A stored secret cannot be opened: ${why}`, { details: { code: 'secret_unreadable' } })
}
