import { describe, expect, test } from 'bun:test'
import { parseIp } from './address'
import { AllowList } from './allow-list'

const ip = (t: string) => parseIp(t)!

describe('OUTBOUND_ALLOW', () => {
  test('addresses and CIDRs in any spelling, with or without a port', () => {
    const list = AllowList.parse('127.0.0.1, 10.0.0.0/8:8443, [fd00::/8]:443, ::1, 0x7f.0.0.2:9000')
    expect(list.size).toBe(5)
    expect(list.allows('localhost', ip('127.0.0.1'), 1234)).toBe(true)
    expect(list.allows('x', ip('127.0.0.3'), 1234)).toBe(false)
    expect(list.allows('x', ip('10.9.8.7'), 8443)).toBe(true)
    expect(list.allows('x', ip('10.9.8.7'), 443)).toBe(false)
    expect(list.allows('x', ip('fd12::1'), 443)).toBe(true)
    expect(list.allows('x', ip('fd12::1'), 80)).toBe(false)
    expect(list.allows('x', ip('::1'), 80)).toBe(true)
    expect(list.allows('x', ip('127.0.0.2'), 9000)).toBe(true)
    expect(list.allows('x', ip('127.0.0.2'), 9001)).toBe(false)
  })

  test('an IPv4-mapped address matches the IPv4 entry', () => {
    expect(AllowList.parse('127.0.0.1').allows('x', ip('::ffff:127.0.0.1'), 80)).toBe(true)
  })

  test('host names, exact or *.suffix, any case, with a port', () => {
    const list = AllowList.parse('ehr.internal, *.corp.example:8443')
    expect(list.allows('EHR.internal', ip('10.0.0.5'), 443)).toBe(true)
    expect(list.allows('ehr.internal.', ip('10.0.0.5'), 443)).toBe(true)
    expect(list.allows('other.internal', ip('10.0.0.5'), 443)).toBe(false)
    expect(list.allows('a.b.corp.example', ip('10.0.0.5'), 8443)).toBe(true)
    expect(list.allows('corp.example', ip('10.0.0.5'), 8443)).toBe(false)
    expect(list.allows('a.corp.example', ip('10.0.0.5'), 443)).toBe(false)
  })

  test('empty: nothing', () => {
    expect(AllowList.parse('').allows('localhost', ip('127.0.0.1'), 80)).toBe(false)
    expect(AllowList.parse(undefined).size).toBe(0)
  })

  test.each(['10.0.0.0/33', '[::1', 'a b', 'host:99999', '1.2.3.4/8/1', '*.', '-bad.example', 'host:0'])('%s is refused with its name', (entry) => {
    expect(() => AllowList.parse(`127.0.0.1,${entry}`)).toThrow(entry)
  })
})
