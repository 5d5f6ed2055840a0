// IP addresses in every spelling a URL, a resolver or an operator may use, and the ranges an outbound
// call must not reach: loopback, private, shared (CGNAT), link-local, unique-local, multicast, broadcast,
// unspecified, documentation, benchmarking and reserved space, cloud metadata addresses, and the IPv6
// forms that embed an IPv4 address (mapped, compatible, translated, NAT64, 6to4).
// https://www.iana.org/assignments/iana-ipv4-special-registry/ https://www.iana.org/assignments/iana-ipv6-special-registry/

export interface IpAddress {
  version: 4 | 6
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array
}

/**
 * An IPv4 address as inet_aton and the URL standard read it: one to four parts, each decimal, octal
 * (leading 0) or hex (0x), the last part filling the remaining bytes (`127.1`, `2130706433`, `0x7f.1`,
 * `0177.0.0.1`). https://url.spec.whatwg.org/#concept-ipv4-parser
 */
export function parseIPv4(text: string): IpAddress | undefined {
  const parts = text.split('.')
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop() // a trailing dot, as the URL parser allows
  if (parts.length < 1 || parts.length > 4) return undefined
  const values: number[] = []
  for (const p of parts) {
    const v = parseIPv4Part(p)
    if (v === undefined) return undefined
    values.push(v)
  }
  const last = values.pop() as number
  if (values.some((v) => v > 255) || last >= 256 ** (4 - values.length)) return undefined
  const bytes = new Uint8Array(4)
  values.forEach((v, i) => {
    bytes[i] = v
  })
  for (let i = 3, rest = last; i >= values.length; i--, rest = Math.floor(rest / 256)) bytes[i] = rest % 256
  return { version: 4, bytes }
}

function parseIPv4Part(p: string): number | undefined {
  if (p === '') return undefined
  let digits = p
  let radix = 10
  if (/^0[xX]/.test(p)) {
    digits = p.slice(2)
    radix = 16
    if (digits === '') return 0
  } else if (p.length > 1 && p.startsWith('0')) {
    digits = p.slice(1)
    radix = 8
  }
  const valid = radix === 16 ? /^[0-9a-fA-F]+$/ : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/
  if (!valid.test(digits)) return undefined
  const v = Number.parseInt(digits, radix)
  return Number.isSafeInteger(v) ? v : undefined
}

/**
 * An IPv6 address: full or `::`-compressed, with an optional dotted IPv4 tail, brackets and zone id
 * (`fe80::1%eth0`) accepted. https://www.rfc-editor.org/rfc/rfc4291#section-2.2
 */
export function parseIPv6(text: string): IpAddress | undefined {
  let s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text
  const zone = s.indexOf('%')
  if (zone >= 0) s = s.slice(0, zone)
  if (!s.includes(':')) return undefined
  const halves = s.split('::')
  if (halves.length > 2) return undefined
  const groups = (half: string): number[] | undefined => {
    if (half === '') return []
    const out: number[] = []
    const items = half.split(':')
    for (const [i, item] of items.entries()) {
      if (i === items.length - 1 && item.includes('.')) {
        const v4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(item) ? parseIPv4(item) : undefined
        if (!v4) return undefined
        out.push((v4.bytes[0] << 8) | v4.bytes[1], (v4.bytes[2] << 8) | v4.bytes[3])
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(item)) return undefined
        out.push(Number.parseInt(item, 16))
      }
    }
    return out
  }
  const head = groups(halves[0])
  const tail = halves.length === 2 ? groups(halves[1]) : []
  if (!head || !tail) return undefined
  const missing = 8 - head.length - tail.length
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined
  const all = [...head, ...new Array(missing).fill(0), ...tail]
  const bytes = new Uint8Array(16)
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8
    bytes[2 * i + 1] = g & 0xff
  })
  return { version: 6, bytes }
}

/** An address in any spelling (IPv6 in or out of brackets), or undefined for a host name. */
export function parseIp(text: string): IpAddress | undefined {
  return text.includes(':') || text.startsWith('[') ? parseIPv6(text) : parseIPv4(text)
}

export function formatIp(ip: IpAddress): string {
  if (ip.version === 4) return ip.bytes.join('.')
  const groups = Array.from({ length: 8 }, (_, i) => ((ip.bytes[2 * i] << 8) | ip.bytes[2 * i + 1]).toString(16))
  // The longest run of zero groups (two or more) becomes `::` (RFC 5952 §4.2).
  let best = -1
  let bestLen = 1
  for (let i = 0; i < 8; ) {
    let j = i
    while (j < 8 && groups[j] === '0') j++
    if (j - i > bestLen) [best, bestLen] = [i, j - i]
    i = j === i ? i + 1 : j
  }
  if (best < 0) return groups.join(':')
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`
}

/** True when the first `prefix` bits of `ip` equal those of `net` (same version). */
export function inPrefix(ip: IpAddress, net: IpAddress, prefix: number): boolean {
  if (ip.version !== net.version) return false
  for (let bit = 0; bit < prefix; bit += 8) {
    const take = Math.min(8, prefix - bit)
    const mask = (0xff << (8 - take)) & 0xff
    if ((ip.bytes[bit / 8] & mask) !== (net.bytes[bit / 8] & mask)) return false
  }
  return true
}

interface Range {
  net: IpAddress
  prefix: number
  label: string
}

const range = (cidr: string, label: string): Range => {
  const [addr, prefix] = cidr.split('/')
  return { net: parseIp(addr) as IpAddress, prefix: Number(prefix), label }
}

/** Cloud instance metadata services: refused even when the allow-list covers their range. */
const METADATA: Range[] = [
  range('169.254.169.254/32', 'metadata'), // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
  range('169.254.170.2/32', 'metadata'), // AWS ECS task metadata
  range('168.63.129.16/32', 'metadata'), // Azure WireServer
  range('100.100.100.200/32', 'metadata'), // Alibaba Cloud
  range('192.0.0.192/32', 'metadata'), // Oracle Cloud Classic
  range('fd00:ec2::254/128', 'metadata'), // AWS IMDS over IPv6
  range('fd20:ce::254/128', 'metadata'), // GCP metadata over IPv6
]

/** Ranges no allow-list opens: a connection there is never what an operator meant. */
const NEVER: Range[] = [
  ...METADATA,
  range('0.0.0.0/8', 'unspecified'), // 0.0.0.0 reaches the local host on Linux
  range('224.0.0.0/4', 'multicast'),
  range('255.255.255.255/32', 'broadcast'),
  range('::/128', 'unspecified'),
  range('ff00::/8', 'multicast'),
]

const IPV4_SPECIAL: Range[] = [
  range('10.0.0.0/8', 'private'),
  range('100.64.0.0/10', 'shared address space (CGNAT)'),
  range('127.0.0.0/8', 'loopback'),
  range('169.254.0.0/16', 'link-local'),
  range('172.16.0.0/12', 'private'),
  range('192.0.0.0/24', 'IETF protocol assignments'),
  range('192.0.2.0/24', 'documentation'),
  range('192.31.196.0/24', 'AS112'),
  range('192.52.193.0/24', 'AMT'),
  range('192.88.99.0/24', '6to4 relay anycast'),
  range('192.168.0.0/16', 'private'),
  range('192.175.48.0/24', 'AS112'),
  range('198.18.0.0/15', 'benchmarking'),
  range('198.51.100.0/24', 'documentation'),
  range('203.0.113.0/24', 'documentation'),
  range('240.0.0.0/4', 'reserved'),
]

const IPV6_SPECIAL: Range[] = [
  range('::1/128', 'loopback'),
  range('64:ff9b:1::/48', 'local-use NAT64'),
  range('100::/64', 'discard-only'),
  range('2001::/23', 'IETF protocol assignments (Teredo, ORCHID, ...)'),
  range('2001:db8::/32', 'documentation'),
  range('3fff::/20', 'documentation'),
  range('5f00::/16', 'segment routing (SRv6)'),
  range('fc00::/7', 'unique-local'),
  range('fe80::/10', 'link-local'),
  range('fec0::/10', 'site-local'),
]

const GLOBAL_UNICAST_V6 = range('2000::/3', 'global unicast')

/** IPv6 prefixes whose last 32 bits (or, for 6to4, bits 16-47) are an IPv4 address. */
const EMBEDDING: { r: Range; at: number }[] = [
  { r: range('::ffff:0:0/96', 'IPv4-mapped'), at: 12 },
  { r: range('::ffff:0:0:0/96', 'IPv4-translated'), at: 12 },
  { r: range('64:ff9b::/96', 'NAT64'), at: 12 },
  { r: range('2002::/16', '6to4'), at: 2 },
  { r: range('::/96', 'IPv4-compatible'), at: 12 },
]

/** The IPv4 address an IPv6 one carries (mapped, translated, NAT64, 6to4, compatible), if any. */
export function embeddedIPv4(ip: IpAddress): { v4: IpAddress; form: string } | undefined {
  if (ip.version !== 6) return undefined
  for (const { r, at } of EMBEDDING) {
    if (inPrefix(ip, r.net, r.prefix)) return { v4: { version: 4, bytes: ip.bytes.slice(at, at + 4) }, form: r.label }
  }
  return undefined
}

export interface Refusal {
  /** What the address is, e.g. `loopback`, `IPv4-mapped private`. */
  label: string
  /** True for the ranges no allow-list can open (metadata, unspecified, multicast, broadcast). */
  never: boolean
}

/** Why an outbound call must not reach `ip`, or undefined for a public address. */
export function classify(ip: IpAddress): Refusal | undefined {
  for (const r of NEVER) if (inPrefix(ip, r.net, r.prefix)) return { label: r.label, never: true }
  if (ip.version === 4) {
    for (const r of IPV4_SPECIAL) if (inPrefix(ip, r.net, r.prefix)) return { label: r.label, never: false }
    return undefined
  }
  for (const r of IPV6_SPECIAL) if (inPrefix(ip, r.net, r.prefix)) return { label: r.label, never: false }
  const inner = embeddedIPv4(ip)
  if (inner) {
    const refused = classify(inner.v4)
    return refused ? { label: `${inner.form} ${refused.label}`, never: refused.never } : undefined
  }
  if (!inPrefix(ip, GLOBAL_UNICAST_V6.net, GLOBAL_UNICAST_V6.prefix)) return { label: 'reserved', never: false }
  return undefined
}
