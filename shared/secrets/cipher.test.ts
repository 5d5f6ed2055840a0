import { describe, expect, test } from 'bun:test'
import { createCipheriv, randomBytes } from 'node:crypto'
import { SecretCipher } from './cipher'
import { parseKey, secretKey } from './keys'

const A = secretKey(Buffer.alloc(32, 1))
const B = secretKey(Buffer.alloc(32, 2))
const cipher = (current = A, ...retired: (typeof A)[]) => new SecretCipher({ current, retired, source: 'TOKEN_ENCRYPTION_KEY' })

describe('SecretCipher', () => {
  test('round trip under a key id, a fresh IV each time, tampering detected', () => {
    const c = cipher()
    const a = c.seal('secret-token')
    expect(a).toStartWith(`v2.${A.id}.`)
    expect(a).not.toContain('secret-token')
    expect(c.seal('secret-token')).not.toBe(a)
    expect(c.open(a)).toBe('secret-token')
    const parts = a.split('.')
    parts[3] = Buffer.from('xxxxxxxxxxxx').toString('base64url')
    expect(() => c.open(parts.join('.'))).toThrow('altered')
    // The key id is authenticated: relabelling a value with another id does not open it.
    expect(() => cipher(B, A).open(`v2.${B.id}.${a.split('.').slice(2).join('.')}`)).toThrow()
  })

  test('a retired key opens what it sealed; an unknown key id is named', () => {
    const old = cipher(A).seal('t')
    expect(cipher(B, A).open(old)).toBe('t')
    expect(cipher(B, A).isCurrent(old)).toBe(false)
    expect(() => cipher(B).open(old)).toThrow(`sealed with key ${A.id}`)
  })

  test('the earlier v1 form opens with a configured key', () => {
    const iv = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', A.key, iv)
    const data = Buffer.concat([c.update('old', 'utf8'), c.final()])
    const v1 = ['v1', iv.toString('base64url'), data.toString('base64url'), c.getAuthTag().toString('base64url')].join('.')
    expect(cipher(B, A).open(v1)).toBe('old')
    expect(() => cipher(B).open(v1)).toThrow('v1')
    expect(SecretCipher.isSealed(v1)).toBe(true)
    expect(SecretCipher.isSealed('plain text')).toBe(false)
  })

  test('sign/verify: bound to purpose and data, verified under retired keys too', () => {
    const mac = cipher(A).sign('hosted-page', 'pf_1')
    expect(mac).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(cipher(A).verify('hosted-page', 'pf_1', mac)).toBe(true)
    expect(cipher(B, A).verify('hosted-page', 'pf_1', mac)).toBe(true)
    expect(cipher(B).verify('hosted-page', 'pf_1', mac)).toBe(false)
    expect(cipher(A).verify('hosted-page', 'pf_2', mac)).toBe(false)
    expect(cipher(A).verify('other', 'pf_1', mac)).toBe(false)
    expect(cipher(A).verify('hosted-page', 'pf_1', mac.slice(1))).toBe(false)
  })

  test('keys: 64 hex or 32 bytes of base64 (either alphabet); ids are stable and differ', () => {
    const bytes = randomBytes(32)
    for (const text of [bytes.toString('hex'), bytes.toString('base64'), bytes.toString('base64url')]) expect(parseKey(text).equals(bytes)).toBe(true)
    expect(() => parseKey('abc')).toThrow('TOKEN_ENCRYPTION_KEY')
    expect(secretKey(Buffer.alloc(32, 1)).id).toBe(A.id)
    expect(A.id).not.toBe(B.id)
  })
})
