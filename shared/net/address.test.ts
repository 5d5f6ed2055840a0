import { describe, expect, test } from 'bun:test'
import { classify, formatIp, parseIp } from './address'

const label = (text: string) => {
  const ip = parseIp(text)
  if (!ip) throw new Error(`not an address: ${text}`)
  return classify(ip)?.label
}

describe('parseIp: every IPv4 spelling', () => {
  test.each([
    ['127.0.0.1', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['127.0.1', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['017700000001', '127.0.0.1'],
    ['0x7F.0.0.0x1', '127.0.0.1'],
    ['127.0.0.1.', '127.0.0.1'],
    ['0', '0.0.0.0'],
    ['0x', '0.0.0.0'],
    ['10.0x10.0300.1', '10.16.192.1'],
    ['3232235777', '192.168.1.1'],
    ['0xa9.0xfe.0xa9.0xfe', '169.254.169.254'],
    ['2852039166', '169.254.169.254'],
  ])('%s is %s', (text, want) => {
    const ip = parseIp(text)
    expect(ip && formatIp(ip)).toBe(want)
  })

  test.each(['256.0.0.1', '1.2.3.4.5', '08.0.0.1', '0x1g', '4294967296', '1..2', 'example.com', '', '127.0.0.256', '1.2.65536'])(
    '%s is not an address',
    (text) => {
      expect(parseIp(text)).toBeUndefined()
    },
  )
})

describe('parseIp: IPv6 forms', () => {
  test.each([
    ['::1', '::1'],
    ['[::1]', '::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['0000:0000:0000:0000:0000:0000:0000:0001', '::1'],
    ['::ffff:127.0.0.1', '::ffff:7f00:1'],
    ['::ffff:7f00:1', '::ffff:7f00:1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['FD00:EC2::254', 'fd00:ec2::254'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['::', '::'],
  ])('%s is %s', (text, want) => {
    const ip = parseIp(text)
    expect(ip && formatIp(ip)).toBe(want)
  })

  test.each(['1::2::3', '12345::', '1:2:3:4:5:6:7:8:9', '::ffff:127.1', ':::', 'g::1', '1:2:3:4:5:6:7'])('%s is not an address', (text) => {
    expect(parseIp(text)).toBeUndefined()
  })
})

describe('classify', () => {
  test.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['2130706433', 'loopback'],
    ['0x7f.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'shared address space (CGNAT)'],
    ['169.254.1.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['0xa9fea9fe', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['192.0.0.8', 'IETF protocol assignments'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'metadata'],
    ['fd20:ce::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['100::1', 'discard-only'],
    ['64:ff9b:1::1', 'local-use NAT64'],
    ['2001::1', 'IETF protocol assignments (Teredo, ORCHID, ...)'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback'],
    ['::ffff:10.1.2.3', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated loopback'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::a00:1', 'IPv4-compatible private'],
    ['64:ff9b::127.0.0.1', 'NAT64 loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 metadata'],
    ['2002:7f00:1::', '6to4 loopback'],
    ['2002:c0a8:101::1', '6to4 private'],
    ['4000::1', 'reserved'],
  ])('%s: %s', (text, want) => {
    expect(label(text)).toBe(want)
  })

  test.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '100.128.0.1',
    '192.169.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public', (text) => {
    expect(label(text)).toBeUndefined()
  })

  test('metadata, unspecified, multicast and broadcast are never allowed; other ranges may be', () => {
    for (const t of ['169.254.169.254', '0.0.0.0', '::', '224.0.0.1', '255.255.255.255', 'fd00:ec2::254', '::ffff:169.254.169.254'])
      expect(classify(parseIp(t)!)?.never).toBe(true)
    for (const t of ['127.0.0.1', '10.0.0.1', '::1', 'fd12::1', '169.254.1.1']) expect(classify(parseIp(t)!)?.never).toBe(false)
  })
})

describe('the URL parser agrees on the spellings', () => {
  test.each([
    ['https://2130706433/x', '127.0.0.1'],
    ['https://0x7f.1/', '127.0.0.1'],
    ['https://127.1/', '127.0.0.1'],
    ['https://0177.0.0.1/', '127.0.0.1'],
    ['https://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]'],
    ['https://[0:0:0:0:0:0:0:1]/', '[::1]'],
  ])('%s has host %s', (url, host) => {
    expect(new URL(url).hostname).toBe(host)
    expect(classify(parseIp(new URL(url).hostname)!)).toBeDefined()
  })
})
