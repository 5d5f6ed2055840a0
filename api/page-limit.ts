// The per-address rate limit of the surfaces that have no per-key one (issue 19, "every surface"): the
// hosted pages a patient's browser opens (/connect, /docs) and the operator endpoints (/admin, /metrics).
// /fhir and the patient API limit per key and, without a valid key, per address (api/http/rate-limit.ts).
// A refusal is 429 with Retry-After and the RateLimit headers, in the operator endpoints' envelope.
import { Elysia } from 'elysia'
import { adminError } from './admin/errors'
import type { AppDeps } from './deps'
import { surfaceLimiters, tooManyRequests } from './http/rate-limit'

const LIMITED = ['/connect', '/docs', '/admin', '/metrics']

/** Whether the URL's path is one of LIMITED or below it, without parsing the URL (this runs on every request). */
function isLimited(url: string): boolean {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return false
  for (const p of LIMITED) {
    if (!url.startsWith(p, start)) continue
    const next = url[start + p.length]
    if (next === undefined || next === '/' || next === '?') return true
  }
  return false
}

export function pageRateLimit(deps: AppDeps) {
  const { pages: limiter, addresses } = surfaceLimiters(deps)
  const what = `requests per ${deps.config.limits.rateWindowMs} ms per address to the hosted pages and operator endpoints (PAGE_RATE_LIMIT)`
  // Synchronous: the hook runs before every route of the app (/fhir too), and an async one costs each an
  // await. Elysia awaits a hook whose text looks asynchronous to it (`return f(` or `=> f(` in it, or the
  // word async or await: compose.mjs isAsync), so the refusal is made before its return.
  return new Elysia({ name: 'page-rate-limit' }).onRequest(({ request, server }) => {
    if (!limiter.enabled || !isLimited(request.url)) return
    const d = limiter.take(addresses.of(server, request))
    const refusal = d.allowed ? undefined : adminError(tooManyRequests(limiter, d, what), request, deps.publicBase())
    return refusal
  })
}
