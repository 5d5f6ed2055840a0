// OUTBOUND_ALLOW: the internal targets an operator lets outbound calls reach (development, the tests'
// local EHR, an EHR on a private network). Comma-separated entries, each optionally with `:port`:
//   a host name (`ehr.internal`, `*.corp.example` for its subdomains), compared with the URL's host;
//   an address or CIDR in any spelling (`127.0.0.1`, `10.0.0.0/8`, `[fd00::/8]:443`, `::1`), compared
//   with the address the name resolved to.
// Metadata, unspecified, multicast and broadcast addresses stay refused whatever the list says.
import { embeddedIPv4, type IpAddress, inPrefix, parseIp } from './address'

interface Entry {
  /** The entry as written, for messages. */
  text: string
  port?: number
  name?: string
  /** `*.example.com`: any subdomain. */
  suffix?: string
  net?: IpAddress
  prefix?: number
}

export class AllowList {
  private constructor(private readonly entries: Entry[]) {}

  static readonly empty = new AllowList([])

  /** Parses the setting; throws an Error naming the bad entry. */
  static parse(setting: string | undefined): AllowList {
    const entries = (setting ?? '')
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean)
      .map(parseEntry)
    return new AllowList(entries)
  }

  get size(): number {
    return this.entries.length
  }

  /** True when an entry covers this target: its URL host name, the address it resolved to, its port. */
  allows(hostname: string, address: IpAddress, port: number): boolean {
    const name = hostname.toLowerCase().replace(/\.$/, '')
    const v4 = embeddedIPv4(address)
    const addresses = v4?.form === 'IPv4-mapped' ? [address, v4.v4] : [address]
    return this.entries.some((e) => {
      if (e.port !== undefined && e.port !== port) return false
      if (e.name !== undefined) return name === e.name
      if (e.suffix !== undefined) return name.endsWith(e.suffix) && name.length > e.suffix.length
      return addresses.some((a) => inPrefix(a, e.net as IpAddress, e.prefix as number))
    })
  }
}

function parseEntry(text: string): Entry {
  const bad = () => new Error(`bad OUTBOUND_ALLOW entry '${text}': expected a host name, an address or a CIDR, optionally with :port`)
  let rest = text
  let port: number | undefined
  // `[v6 or v6/len]:port`, `v4:port`, `name:port`; a bare IPv6 address (several colons) has no port.
  const bracketed = /^\[([^\]]+)\](?::(\d+|\*))?$/.exec(rest)
  if (bracketed) {
    rest = bracketed[1]
    port = portOf(bracketed[2], bad)
  } else if ((rest.match(/:/g) ?? []).length === 1) {
    const i = rest.indexOf(':')
    port = portOf(rest.slice(i + 1), bad)
    rest = rest.slice(0, i)
  }
  const [addr, len, ...more] = rest.split('/')
  if (more.length) throw bad()
  const ip = parseIp(addr)
  if (ip) {
    const max = ip.version === 4 ? 32 : 128
    const prefix = len === undefined ? max : Number(len)
    if (!/^\d+$/.test(len ?? String(max)) || prefix > max) throw bad()
    return { text, port, net: ip, prefix }
  }
  if (len !== undefined) throw bad()
  const name = addr.toLowerCase().replace(/\.$/, '')
  if (name.startsWith('*.')) {
    if (!isHostName(name.slice(2))) throw bad()
    return { text, port, suffix: name.slice(1) }
  }
  if (!isHostName(name)) throw bad()
  return { text, port, name }
}

function portOf(v: string | undefined, bad: () => Error): number | undefined {
  if (v === undefined || v === '*') return undefined
  const n = Number(v)
  if (!/^\d+$/.test(v) || n < 1 || n > 65535) throw bad()
  return n
}

const isHostName = (s: string) => /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(s)
