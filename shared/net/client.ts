// The one outbound HTTP client: webhook deliveries, SMART discovery, token requests and record pulls
// all go through it (ARCHITECTURE.md, "Hostile input and outbound calls"). Each hop is checked by
// target.ts and sent to the very address that was checked: the URL's name goes in the Host header and
// as the TLS server name, so the certificate is still verified for the name. Redirects are followed
// only when the caller asks (GET), each hop checked again; credentials are dropped when the origin
// changes. Every call has a deadline and reads at most a bounded number of response bytes.
import type { Config } from '../config'
import { formatIp } from './address'
import { AllowList } from './allow-list'
import { OutboundResponse } from './response'
import { type CheckedTarget, checkTarget, failureText, OutboundFailed, type Resolver, systemResolver } from './target'

export interface OutboundPolicy {
  allow: AllowList
  /** Deadline of a whole call (every hop, headers and body) unless the call sets its own. */
  timeoutMs: number
  /** Largest response body read unless the call sets its own. */
  maxResponseBytes: number
  resolve?: Resolver
}

export interface OutboundRequest {
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string
  timeoutMs?: number
  maxResponseBytes?: number
  /** Redirects to follow (GET only), each hop checked like the first. 0 (the default): a 3xx is answered as is. */
  followRedirects?: number
  /** Aborts the call (and the reading of its body) besides the deadline: a caller's own rule, e.g. a
   *  bulk import's idle timeout on a body read for hours. */
  signal?: AbortSignal
}

/** Headers that carry the caller's credentials: never sent to another origin. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization']
const REDIRECTS = new Set([301, 302, 303, 307, 308])
const RESOLVE_TIMEOUT_MS = 5_000

export class Outbound {
  private readonly resolve: Resolver

  constructor(readonly policy: OutboundPolicy) {
    this.resolve = policy.resolve ?? systemResolver
  }

  static fromConfig(config: Pick<Config, 'outboundAllow' | 'outboundTimeoutMs' | 'outboundMaxResponseBytes'>, resolve?: Resolver): Outbound {
    return new Outbound({
      allow: AllowList.parse(config.outboundAllow),
      timeoutMs: config.outboundTimeoutMs,
      maxResponseBytes: config.outboundMaxResponseBytes,
      resolve,
    })
  }

  /**
   * Registration-time check of a URL an outbound call will use later (webhook endpoint, source base
   * URL): refused targets throw OutboundRefused; a name that does not resolve now passes, since every
   * call checks its target again.
   */
  async checkUrl(url: string): Promise<{ allowListed: boolean }> {
    const target = await checkTarget(url, { allow: this.policy.allow, resolve: this.resolve, resolveTimeoutMs: RESOLVE_TIMEOUT_MS, lenient: true })
    return { allowListed: target?.allowListed ?? false }
  }

  /** Sends one request (and its redirects when asked); throws OutboundRefused or OutboundFailed. */
  async fetch(input: string, req: OutboundRequest = {}): Promise<OutboundResponse> {
    const timeoutMs = req.timeoutMs ?? this.policy.timeoutMs
    const signal = req.signal ? AbortSignal.any([AbortSignal.timeout(timeoutMs), req.signal]) : AbortSignal.timeout(timeoutMs)
    const method = req.method ?? 'GET'
    const follow = method === 'GET' ? (req.followRedirects ?? 0) : 0
    let headers = { ...req.headers }
    let url = input
    for (let hop = 0; ; hop++) {
      const target = await checkTarget(url, {
        allow: this.policy.allow,
        resolve: this.resolve,
        resolveTimeoutMs: Math.min(RESOLVE_TIMEOUT_MS, timeoutMs),
      })
      const res = await this.send(target as CheckedTarget, method, headers, req.body, signal, timeoutMs)
      const location = res.headers.get('location')
      if (!REDIRECTS.has(res.status) || !location || follow === 0)
        return new OutboundResponse(res, url, req.maxResponseBytes ?? this.policy.maxResponseBytes, timeoutMs)
      await res.body?.cancel().catch(() => {})
      if (hop >= follow) throw new OutboundFailed(`more than ${follow} redirects from ${input}`)
      let next: URL
      try {
        next = new URL(location, url)
      } catch {
        throw new OutboundFailed(`redirect to an invalid URL from ${url}`)
      }
      if (next.origin !== new URL(url).origin) headers = withoutCredentials(headers)
      url = next.toString()
    }
  }

  private async send(
    target: CheckedTarget,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<Response> {
    const connectTo = new URL(target.url)
    if (target.named) connectTo.hostname = target.address.version === 6 ? `[${formatIp(target.address)}]` : formatIp(target.address)
    try {
      return await fetch(connectTo, {
        method,
        headers: { ...headers, host: target.url.host },
        body,
        redirect: 'manual',
        signal,
        // The certificate is verified for the name the URL gave, not the address connected to.
        tls: target.named && target.url.protocol === 'https:' ? { serverName: target.url.hostname } : undefined,
        // A proxy would resolve the name again itself.
        proxy: false,
      })
    } catch (err) {
      throw new OutboundFailed(failureText(err, target.url, timeoutMs))
    }
  }
}

function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !CREDENTIAL_HEADERS.includes(k.toLowerCase())))
}
