import { describe, expect, test } from 'bun:test'
import { TokenCipher } from './token-cipher'

describe('TokenCipher', () => {
  const key = 'a'.repeat(64)
  test('round trip, random IV, tamper detected', () => {
    const c = TokenCipher.from(key, 'unused')
    const a = c.encrypt('secret-token')
    expect(a).not.toContain('secret-token')
    expect(c.encrypt('secret-token')).not.toBe(a)
    expect(c.decrypt(a)).toBe('secret-token')
    const parts = a.split('.')
    parts[2] = Buffer.from('xxxxxxxxxxxx').toString('base64url')
    expect(() => c.decrypt(parts.join('.'))).toThrow()
  })
  test('another key cannot decrypt; the derived key is stable per secret', () => {
    const a = TokenCipher.from(undefined, 's1').encrypt('t')
    expect(TokenCipher.from(undefined, 's1').decrypt(a)).toBe('t')
    expect(() => TokenCipher.from(undefined, 's2').decrypt(a)).toThrow()
    expect(() => TokenCipher.from(key, 's1').decrypt(a)).toThrow()
  })
})
