// The address a request came from, for the per-address rate limits (api/http/rate-limit.ts). Behind nginx or a
// load balancer every request's peer is the proxy: TRUSTED_PROXIES names the proxies (addresses or CIDRs,
// comma-separated, any spelling shared/net/address.ts reads) whose X-Forwarded-For is believed. The header
// is read from its right end, where the nearest proxy appended the peer it saw, skipping trusted proxies:
// the first address that is not one is the client (what nginx's real_ip_recursive does). A client cannot
// choose it: what it sends itself stays to the left of what the trusted proxies append. By default no
// proxy is trusted and the header is ignored.
// https://developer.mozilla.org/en-US/docs/Web/HTTP/Reference/Headers/X-Forwarded-For#selecting_an_ip_address
import { embeddedIPv4, formatIp, type IpAddress, inPrefix, parseIp } from './address'

/** What tells a request's peer: the server (Elysia's context `server`). */
export interface Peer {
  requestIP(r: Request): { address: string } | null
}

interface Net {
  ip: IpAddress
  prefix: number
}

export class ClientAddresses {
  private constructor(private readonly trusted: Net[]) {}

  /** Parses TRUSTED_PROXIES; throws an Error naming the bad entry. */
  static parse(setting: string | undefined): ClientAddresses {
    const nets = (setting ?? '')
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean)
      .map((entry) => {
        const [addr, len, ...more] = entry.replace(/^\[(.*)\]$/, '$1').split('/')
        const ip = parseIp(addr)
        const max = ip?.version === 4 ? 32 : 128
        const prefix = len === undefined ? max : Number(len)
        if (!ip || more.length > 0 || !/^\d+$/.test(len ?? '0') || prefix > max)
          throw new Error(`bad TRUSTED_PROXIES entry '${entry}': expected an address or a CIDR (10.0.0.0/8, fd00::/8)`)
        return { ip, prefix }
      })
    return new ClientAddresses(nets)
  }

  /** The client's address: the peer of the connection, or behind trusted proxies what they forwarded. */
  of(server: Peer | null | undefined, request: Request): string {
    // Costly in Bun (about as much as a whole small request): asked only for traffic without a valid
    // key, or while such traffic is being counted.
    const peer = server?.requestIP(request)?.address
    if (peer === undefined) return 'unknown'
    if (this.trusted.length === 0) return peer
    let hop = parseIp(peer)
    if (!hop || !this.isTrusted(hop)) return peer
    const forwarded = request.headers.get('x-forwarded-for')
    if (!forwarded) return peer
    const chain = forwarded.split(',')
    for (let i = chain.length - 1; i >= 0; i--) {
      const ip = parseForwarded(chain[i])
      if (!ip) break // not an address: the last trusted hop is as far as can be known
      hop = ip
      if (!this.isTrusted(ip)) break
    }
    const v4 = embeddedIPv4(hop)
    return formatIp(v4?.form === 'IPv4-mapped' ? v4.v4 : hop)
  }

  private isTrusted(ip: IpAddress): boolean {
    const v4 = embeddedIPv4(ip)
    const forms = v4?.form === 'IPv4-mapped' ? [ip, v4.v4] : [ip]
    return this.trusted.some((n) => forms.some((f) => inPrefix(f, n.ip, n.prefix)))
  }
}

/** One X-Forwarded-For entry: an address, IPv6 perhaps in brackets, either perhaps with a port. */
function parseForwarded(entry: string): IpAddress | undefined {
  const e = entry.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(e)
  if (bracketed) return parseIp(bracketed[1])
  const v4WithPort = /^([0-9.]+):\d+$/.exec(e)
  return parseIp(v4WithPort ? v4WithPort[1] : e)
}
