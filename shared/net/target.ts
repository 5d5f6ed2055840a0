// Where an outbound call may go: http(s) URLs without credentials whose host (an address, or every
// address its name resolves to) is public, or covered by OUTBOUND_ALLOW. The caller connects to the
// address checked here (client.ts pins it), so a name that resolves elsewhere a moment later (DNS
// rebinding) changes nothing.
import { lookup } from 'node:dns/promises'
import { AppError } from '../errors'
import { classify, formatIp, type IpAddress, parseIp } from './address'
import type { AllowList } from './allow-list'

/** Resolves a host name to its addresses (all families). */
export type Resolver = (hostname: string) => Promise<string[]>

export const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address)

/** A target that passed the check: the URL, the address to connect to, and the port. */
export interface CheckedTarget {
  url: URL
  address: IpAddress
  port: number
  /** The URL's host is a name (not an address literal): connect to `address`, send the name. */
  named: boolean
  /** An internal address that OUTBOUND_ALLOW lets through (not a public one). */
  allowListed: boolean
}

/** The target is refused by policy; nothing was sent. `details.code` is `outbound_refused`. */
export class OutboundRefused extends AppError {
  constructor(message: string) {
    super('invalid', message, { details: { code: 'outbound_refused' } })
    this.name = 'OutboundRefused'
  }
}

/** The call was allowed but failed (unresolvable, unreachable, timeout, too large). `details.code` is `outbound_failed`. */
export class OutboundFailed extends AppError {
  constructor(message: string) {
    super('fault', message, { details: { code: 'outbound_failed' } })
    this.name = 'OutboundFailed'
  }
}

export interface CheckOptions {
  allow: AllowList
  resolve: Resolver
  /** How long name resolution may take. */
  resolveTimeoutMs: number
  /** Registration: a name that does not resolve now passes (the call itself checks again). */
  lenient?: boolean
}

/** Checks a URL as a target of an outbound call; throws OutboundRefused (or OutboundFailed when its name cannot be resolved). */
export async function checkTarget(input: string | URL, opts: CheckOptions): Promise<CheckedTarget | undefined> {
  let url: URL
  try {
    url = new URL(input)
  } catch {
    throw new OutboundRefused('not an absolute URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundRefused(`${url.protocol} URLs are not allowed (http or https only)`)
  if (url.username || url.password) throw new OutboundRefused('URLs with credentials (user:password@) are not allowed')
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  const literal = parseIp(url.hostname)
  let addresses: IpAddress[]
  if (literal) addresses = [literal]
  else {
    let resolved: string[]
    try {
      resolved = await withTimeout(opts.resolve(url.hostname), opts.resolveTimeoutMs)
    } catch (err) {
      if (opts.lenient) return undefined
      throw new OutboundFailed(`cannot resolve ${url.hostname}: ${(err as { code?: string }).code ?? (err as Error).message}`)
    }
    addresses = resolved.map((a) => parseIp(a)).filter((a): a is IpAddress => a !== undefined)
    if (addresses.length === 0) {
      if (opts.lenient) return undefined
      throw new OutboundFailed(`cannot resolve ${url.hostname}: no address`)
    }
  }
  // Every address must pass: a name with one public and one internal address is refused as a whole.
  let allowListed = false
  for (const address of addresses) {
    const refused = classify(address)
    if (!refused) continue
    allowListed = true
    const where = literal ? `${formatIp(address)}` : `${url.hostname} (${formatIp(address)})`
    if (refused.never) throw new OutboundRefused(`${where} is a ${refused.label} address; outbound calls never go there`)
    if (!opts.allow.allows(url.hostname.replace(/^\[|\]$/g, ''), address, port))
      throw new OutboundRefused(`${where} is a ${refused.label} address; outbound calls go there only when OUTBOUND_ALLOW names it`)
  }
  return { url, address: addresses[0], port, named: !literal, allowListed }
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ETIMEOUT' })), ms)
  })
  try {
    return await Promise.race([p, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** What a failed call's error says: a timeout or the network error, naming the origin. */
export function failureText(err: unknown, url: URL | string, timeoutMs: number): string {
  const e = err as Error & { code?: string }
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer from ${new URL(url).origin} within ${timeoutMs} ms`
  return `${new URL(url).origin} unreachable: ${e?.code ?? e?.message ?? String(err)}`
}
