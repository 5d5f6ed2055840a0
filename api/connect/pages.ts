// The hosted pages a patient opens: GET /connect/{flowId} (the picker, or in direct mode an immediate
// redirect to the source), POST /connect/{flowId}/authorize (Connect), GET /connect/callback (the SMART
// redirect URI), POST /connect/{flowId}/done (Done -> return_url). ../shared/notes/patient-api.md §4, §6.1.
import { Elysia } from 'elysia'
import type { AppDeps } from '../app'
import { handleCallback } from '../../shared/connect/handle-callback'
import { finishFlow } from '../../shared/connect/finish-flow'
import { flowConnectionItems, pickerSources } from '../../shared/connect/picker-sources'
import { startAuthorization } from '../../shared/connect/start-authorization'
import { AppError } from '../../shared/errors'
import { log } from '../../shared/log'
import { type FlowRow, loadFlow } from '../../shared/patients/flows'
import { messageHtml, pickerHtml } from './page-html'

const NOTICES: Record<string, string> = {
  connected: 'Connected. Your records are being imported; you can connect another provider or press Done.',
  denied: 'You declined to share your records with us. You can try again or pick another provider.',
  failed: 'Signing in at your provider did not work. You can try again or pick another provider.',
}

export function connectPages(deps: AppDeps) {
  const baseOf = (request: Request) => deps.config.publicBaseUrl ?? new URL(request.url).origin
  const redirectUri = (request: Request) => `${baseOf(request)}/connect/callback`
  const core = { sql: deps.sql, jobs: deps.jobs, config: deps.config, secret: deps.secret }

  /** The flow of the URL, or the page that says why it cannot be used. */
  const openFlow = async (id: string): Promise<FlowRow | Response> => {
    const flow = await loadFlow(deps.sql, id)
    if (!flow) return html(messageHtml('Link not found', 'This connection link does not exist. Ask for a new one.'), 404)
    if (flow.status === 'expired')
      return html(messageHtml('This link has expired', 'For your security, connection links only work for a limited time. Please ask for a new link.'), 410)
    if (flow.status === 'complete')
      return html(messageHtml('You are all set', 'This connection link has already been completed. You can close this page.'), 200)
    return flow
  }

  return new Elysia({ name: 'connect-pages' })
    .get('/connect/callback', ({ request }) =>
      guard(async () => {
        const { flow, connection } = await handleCallback(core, new URL(request.url).searchParams)
        if (flow.connection_id) return see(await finishFlow(core, flow, baseOf(request), connection))
        const result = connection.status === 'active' ? 'connected' : connection.failure_code === 'user_denied' ? 'denied' : 'failed'
        return see(`/connect/${encodeURIComponent(flow.id)}?result=${result}`)
      }),
    )
    .get('/connect/:flowId', ({ request, params }) =>
      guard(async () => {
        const flow = await openFlow(params.flowId)
        if (flow instanceof Response) return flow
        // Direct mode: no UI, straight to the source's sign-in.
        if (flow.connection_id) return Response.redirect(await startAuthorization(deps.sql, flow, flow.connection_id, redirectUri(request)), 302)
        const url = new URL(request.url)
        const search = (url.searchParams.get('q') ?? '').trim().slice(0, 100)
        const [{ recommended, others }, connections] = await Promise.all([
          pickerSources(deps.sql, flow.recommended_connection_ids ?? [], search || undefined),
          flowConnectionItems(deps.sql, flow.id),
        ])
        const notice = NOTICES[url.searchParams.get('result') ?? '']
        return html(pickerHtml({ flowId: flow.id, search, recommended, others, connections, returnButtonLabel: flow.return_button_label, notice }))
      }),
    )
    .post(
      '/connect/:flowId/authorize',
      ({ request, params }) =>
        guard(async () => {
          const flow = await openFlow(params.flowId)
          if (flow instanceof Response) return flow
          const sourceId = String((await formOf(request)).get('source_id') ?? '')
          if (!sourceId) return html(messageHtml('Pick a provider', 'No provider was chosen. Go back and press Connect next to your provider.'), 400)
          return see(await startAuthorization(deps.sql, flow, sourceId, redirectUri(request)))
        }),
      { parse: 'none' },
    )
    .post(
      '/connect/:flowId/done',
      ({ request, params }) =>
        guard(async () => {
          const flow = await openFlow(params.flowId)
          if (flow instanceof Response) return flow
          return see(await finishFlow(core, flow, baseOf(request)))
        }),
      { parse: 'none' },
    )
}

async function formOf(request: Request): Promise<URLSearchParams> {
  return new URLSearchParams(await request.text())
}

/** Errors of the hosted pages become a readable page, never a JSON envelope. */
async function guard(fn: () => Promise<Response>): Promise<Response> {
  try {
    return await fn()
  } catch (err) {
    const e = err instanceof AppError ? err : undefined
    if (!e) log.error('connect page failed', { err: String((err as Error)?.stack ?? err) })
    const code = e?.details.code
    if (code === 'oauth_state_expired') return html(messageHtml('This sign-in has expired', e?.message ?? ''), 400)
    if (e?.category === 'not-found') return html(messageHtml('Not found', e.message), 404)
    if (e?.category === 'conflict') return html(messageHtml('This link can no longer be used', e.message), 409)
    if (e?.category === 'invalid') return html(messageHtml('Something is not right', e.message), 400)
    if (code === 'oauth_error' || code === 'config_missing')
      return html(
        messageHtml('This provider is not available right now', 'We could not reach the provider’s sign-in. Please try again later or pick another provider.'),
        502,
      )
    return html(messageHtml('Something went wrong', 'Please try again in a moment.'), 500)
  }
}

const html = (body: string, status = 200) =>
  new Response(body, { status, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } })
const see = (location: string) => new Response(null, { status: 303, headers: { location } })
