import { describe, expect, test } from 'bun:test'
import { ClientAddresses, type Peer } from './client-address'

const peer = (address: string): Peer => ({ requestIP: () => ({ address }) })
const req = (xff?: string) => new Request('http://x/', { headers: xff === undefined ? {} : { 'x-forwarded-for': xff } })

describe('ClientAddresses', () => {
  const proxies = ClientAddresses.parse('10.0.0.0/8, [fd00::/8], 192.0.2.1')

  test('trusts no proxy by default: the peer, whatever the header says', () => {
    expect(ClientAddresses.parse(undefined).of(peer('10.1.1.1'), req('203.0.113.5'))).toBe('10.1.1.1')
    expect(ClientAddresses.parse('').of(peer('::1'), req('203.0.113.5'))).toBe('::1')
  })

  test('a peer that is not a trusted proxy is the client', () => {
    expect(proxies.of(peer('198.51.100.4'), req('203.0.113.5'))).toBe('198.51.100.4')
  })

  test('behind trusted proxies: the rightmost address that is not one of them', () => {
    expect(proxies.of(peer('10.0.0.2'), req('203.0.113.5'))).toBe('203.0.113.5')
    expect(proxies.of(peer('10.0.0.2'), req('1.1.1.1, 203.0.113.5, 192.0.2.1, 10.9.9.9'))).toBe('203.0.113.5')
    expect(proxies.of(peer('::ffff:10.0.0.2'), req('203.0.113.5:4711'))).toBe('203.0.113.5')
    expect(proxies.of(peer('fd00::1'), req('[2001:db8::7]:443'))).toBe('2001:db8::7')
  })

  test('no header, or every hop trusted, or a hop that is no address: as far as the trusted chain goes', () => {
    expect(proxies.of(peer('10.0.0.2'), req())).toBe('10.0.0.2')
    expect(proxies.of(peer('10.0.0.2'), req('10.0.0.3, 192.0.2.1'))).toBe('10.0.0.3')
    expect(proxies.of(peer('10.0.0.2'), req('203.0.113.5, unknown'))).toBe('10.0.0.2')
    expect(proxies.of(null, req('203.0.113.5'))).toBe('unknown')
  })

  test('bad entries are refused, naming the entry', () => {
    for (const bad of ['10.0.0.0/33', 'proxy.internal', '10.0.0.0/8/1', 'fd00::/129'])
      expect(() => ClientAddresses.parse(bad)).toThrow(`bad TRUSTED_PROXIES entry '${bad}'`)
  })
})
