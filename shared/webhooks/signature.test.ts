import { expect, test } from 'bun:test'
import { signatureHeader, verifySignature } from './signature'

test('a signature verifies over the exact body, secret and a recent timestamp only', () => {
  const body = '{"id":"evt_1","type":"records.sync.completed"}'
  const t = Math.floor(Date.now() / 1000)
  const h = signatureHeader('whsec_a', body, t)
  expect(h).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
  expect(verifySignature('whsec_a', h, body)).toBe(true)
  expect(verifySignature('whsec_b', h, body)).toBe(false)
  expect(verifySignature('whsec_a', h, `${body} `)).toBe(false)
  expect(verifySignature('whsec_a', signatureHeader('whsec_a', body, t - 301), body)).toBe(false)
  expect(verifySignature('whsec_a', undefined, body)).toBe(false)
})
