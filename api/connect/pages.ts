// The hosted pages a patient opens: GET /connect/{flowId}/{token} (the picker, or in direct mode an
// immediate redirect to the source), POST .../authorize (Connect), GET /connect/callback (the SMART
// redirect URI), POST .../done (Done -> return_url). ../shared/notes/patient-api.md §4, §6.1.
// Every step needs the page's token (shared/connect/page-token.ts); every answer carries the headers
// of PAGE_HEADERS; every link and the redirect_uri are built on the configured public base URL, never
// on the request's Host header.
import { randomBytes } from 'node:crypto'
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { handleCallback } from '../../shared/connect/handle-callback'
import { failDirectFlow, finishFlow, returnUrl } from '../../shared/connect/finish-flow'
import { isPageToken, pageUrl } from '../../shared/connect/page-token'
import { flowConnectionItems, pickerSources } from '../../shared/connect/picker-sources'
import { startAuthorization } from '../../shared/connect/start-authorization'
import { AppError } from '../../shared/errors'
import { log } from '../../shared/log'
import { type FlowRow, loadFlow } from '../../shared/patients/flows'
import { CONTENT_SECURITY_POLICY, messageHtml, pickerHtml, type WayBack } from './page-html'

const NOTICES: Record<string, string> = {
  connected: 'Connected. Your records are being imported; you can connect another provider or press Done.',
  denied: 'You declined to share your records with us. You can try again or pick another provider.',
  failed: 'Signing in at your provider did not work. You can try again or pick another provider.',
}

/** On every hosted page and redirect: no framing, no referrer (the URL holds the token), no caching. */
const PAGE_HEADERS: Record<string, string> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
}

/** Codes of a source that cannot be reached or used before sign-in: direct mode returns with source_unavailable. */
const SOURCE_UNAVAILABLE = new Set(['oauth_error', 'config_missing', 'outbound_failed', 'outbound_refused', 'fhir_error'])

/** The flow a page is about, once known: its error pages offer the way back (guard). */
interface Seen {
  flow?: FlowRow
}

/** The cookie that binds a sign-in at the source to the browser that pressed Connect. */
const BINDING_COOKIE = 'connect_binding'

export function connectPages(deps: AppDeps) {
  const core = { sql: deps.sql, jobs: deps.jobs, config: deps.config, cipher: deps.cipher, outbound: deps.outbound }
  const redirectUri = () => `${deps.publicBase()}/connect/callback`
  const flowPageUrl = (flowId: string) => pageUrl(deps.cipher, deps.publicBase(), flowId)

  const wayBack = (flow: FlowRow): WayBack => {
    const label = flow.return_button_label ?? 'Done'
    if (flow.status !== 'open') return { label, returnUrl: returnUrl(flow) }
    return { label, pickerUrl: flow.connection_id ? undefined : flowPageUrl(flow.id), doneAction: `${flowPageUrl(flow.id)}/done` }
  }

  /** The flow of the URL when its token is right, or the page that says why it cannot be used. */
  const openFlow = async (id: string, token: string, seen: Seen): Promise<FlowRow | Response> => {
    const flow = isPageToken(deps.cipher, id, token) ? await loadFlow(deps.sql, id) : undefined
    if (!flow) return notFoundPage()
    seen.flow = flow
    if (flow.status === 'expired')
      return html(
        messageHtml('This link has expired', 'For your security, connection links only work for a limited time. Please ask for a new link.', wayBack(flow)),
        410,
      )
    if (flow.status === 'complete')
      return html(messageHtml('You are all set', 'This connection link has already been completed. You can close this page.', wayBack(flow)), 200)
    return flow
  }

  /** Errors of the hosted pages become a readable page (never a JSON envelope), with the way back when the flow is known. */
  const guard = async (fn: (seen: Seen) => Promise<Response>): Promise<Response> => {
    const seen: Seen = {}
    try {
      return await fn(seen)
    } catch (err) {
      return errorPage(err, seen.flow ? wayBack(seen.flow) : undefined)
    }
  }

  /** Redirects to the source's sign-in, binding the attempt to this browser (its cookie, set if new). */
  const toSource = async (request: Request, flow: FlowRow, sourceId: string, status: 302 | 303) => {
    const known = cookieOf(request, BINDING_COOKIE)
    const binding = known && /^[A-Za-z0-9_-]{22,64}$/.test(known) ? known : randomBytes(24).toString('base64url')
    const location = await startAuthorization(core, flow, sourceId, redirectUri(), binding)
    const res = see(location, status)
    if (binding !== known) {
      // The browser sees the public base: its path (behind a proxy) and scheme decide Path and Secure.
      const base = new URL(deps.publicBase())
      const secure = base.protocol === 'https:' ? '; Secure' : ''
      res.headers.append(
        'set-cookie',
        `${BINDING_COOKIE}=${binding}; Path=${base.pathname.replace(/\/$/, '')}/connect; Max-Age=86400; HttpOnly; SameSite=Lax${secure}`,
      )
    }
    return res
  }

  return new Elysia({ name: 'connect-pages' })
    .get('/connect/callback', ({ request }) =>
      guard(async (seen) => {
        const query = new URL(request.url).searchParams
        const { flow, connection } = await handleCallback(core, query, cookieOf(request, BINDING_COOKIE))
        seen.flow = flow
        if (flow.connection_id) return see(await finishFlow(core, flow, flowPageUrl, connection))
        const result = connection.status === 'active' ? 'connected' : connection.failure_code === 'user_denied' ? 'denied' : 'failed'
        return see(`${flowPageUrl(flow.id)}?result=${result}`)
      }),
    )
    .get('/connect/:flowId', () => notFoundPage()) // no token: the form before tokens, or pieced together from a flow id
    .get('/connect/:flowId/:token', ({ request, params }) =>
      guard(async (seen) => {
        const flow = await openFlow(params.flowId, params.token, seen)
        if (flow instanceof Response) return flow
        // Direct mode: no UI, straight to the source's sign-in; a source that cannot be reached sends
        // the patient back to return_url with success=false&error=source_unavailable.
        if (flow.connection_id) {
          try {
            return await toSource(request, flow, flow.connection_id, 302)
          } catch (err) {
            if (!(err instanceof AppError && SOURCE_UNAVAILABLE.has(String(err.details.code)))) throw err
            log.warn('direct-mode source unavailable', { flow: flow.id, source: flow.connection_id, err: err.message })
            return see(await failDirectFlow(core, flow, flowPageUrl, 'source_unavailable'), 302)
          }
        }
        const url = new URL(request.url)
        const search = (url.searchParams.get('q') ?? '').trim().slice(0, 100)
        const [{ recommended, others }, connections] = await Promise.all([
          pickerSources(deps.sql, flow.recommended_connection_ids ?? [], search || undefined),
          flowConnectionItems(deps.sql, flow.id),
        ])
        const notice = NOTICES[url.searchParams.get('result') ?? '']
        return html(
          pickerHtml({ pageUrl: flowPageUrl(flow.id), search, recommended, others, connections, returnButtonLabel: flow.return_button_label, notice }),
        )
      }),
    )
    .post(
      '/connect/:flowId/:token/authorize',
      ({ request, params }) =>
        guard(async (seen) => {
          const flow = await openFlow(params.flowId, params.token, seen)
          if (flow instanceof Response) return flow
          const sourceId = String((await formOf(request)).get('source_id') ?? '')
          if (!sourceId)
            return html(messageHtml('Pick a provider', 'No provider was chosen. Go back and press Connect next to your provider.', wayBack(flow)), 400)
          return toSource(request, flow, sourceId, 303)
        }),
      { parse: 'none' },
    )
    .post(
      '/connect/:flowId/:token/done',
      ({ params }) =>
        guard(async (seen) => {
          const flow = await openFlow(params.flowId, params.token, seen)
          if (flow instanceof Response) return flow
          return see(await finishFlow(core, flow, flowPageUrl))
        }),
      { parse: 'none' },
    )
}

async function formOf(request: Request): Promise<URLSearchParams> {
  return new URLSearchParams(await request.text())
}

function cookieOf(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=')
    if (k === name) return v.join('=')
  }
  return undefined
}

/** The page of an error, with the way back to the picker and to return_url when the flow is known. */
function errorPage(err: unknown, back: WayBack | undefined): Response {
  const e = err instanceof AppError ? err : undefined
  if (!e) log.error('connect page failed', { err: String((err as Error)?.stack ?? err) })
  const code = e?.details.code
  if (code === 'oauth_state_expired') return html(messageHtml('This sign-in has expired', e?.message ?? '', back), 400)
  if (e?.category === 'not-found') return html(messageHtml('Not found', e.message, back), 404)
  if (e?.category === 'conflict') return html(messageHtml('This link can no longer be used', e.message, back), 409)
  if (code !== undefined && SOURCE_UNAVAILABLE.has(String(code)))
    return html(
      messageHtml(
        'This provider is not available right now',
        'We could not reach the provider’s sign-in. Please try again later or pick another provider.',
        back,
      ),
      502,
    )
  if (e?.category === 'invalid') return html(messageHtml('Something is not right', e.message, back), 400)
  return html(messageHtml('Something went wrong', 'Please try again in a moment.', back), 500)
}

const notFoundPage = () => html(messageHtml('Link not found', 'This connection link does not exist. Ask for a new one.'), 404)

const html = (body: string, status = 200) => new Response(body, { status, headers: { ...PAGE_HEADERS, 'content-type': 'text/html; charset=utf-8' } })

const see = (location: string, status: 302 | 303 = 303) => new Response(null, { status, headers: { ...PAGE_HEADERS, location } })
