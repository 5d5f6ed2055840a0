// The source sends the patient back: validate `state` (known, unused, recent, and back in the browser
// that started it: start-authorization.ts), then record the
// connection: `active` with its tokens (encrypted) after a successful code exchange, or `failed` with
// user_denied (the patient said no), oauth_callback_failed (an error or no code), or
// token_exchange_failed. An active connection gets its first sync job.
// https://hl7.org/fhir/smart-app-launch/STU2/app-launch.html#response-5
import type { Config } from '../config'
import type { Sql } from '../db/client'
import type { Jobs } from '../jobs/queues'
import { log } from '../log'
import type { Outbound } from '../net/client'
import { apiError } from '../patients/api-error'
import { type ConnectionRow, recordConnection } from '../patients/connections'
import { sourceCredentials } from '../patients/fhir-sources'
import { type FlowRow, loadFlow } from '../patients/flows'
import type { SecretCipher } from '../secrets/cipher'
import { saveTokens } from './connection-tokens'
import { ConnectSyncJob } from './jobs'
import { ATTEMPT_TTL_MS, bindingHash } from './start-authorization'
import { exchangeCode } from './token-client'

export interface CallbackDeps {
  sql: Sql
  jobs: Jobs
  config: Config
  cipher: SecretCipher
  outbound: Outbound
}

export interface CallbackResult {
  flow: FlowRow
  connection: ConnectionRow
}

export async function handleCallback(deps: CallbackDeps, query: URLSearchParams, browserBinding: string | undefined): Promise<CallbackResult> {
  const state = query.get('state') ?? ''
  const binding = browserBinding ? bindingHash(browserBinding) : ''
  const [attempt] = await deps.sql<{ flow_id: string; fhir_source_id: string; code_verifier: string; redirect_uri: string; token_endpoint: string }[]>`
    update connect_attempt set used_at = now()
    where state = ${state} and used_at is null and created_at > now() - make_interval(secs => ${ATTEMPT_TTL_MS / 1000})
      and browser_binding = ${binding}
    returning flow_id, fhir_source_id, code_verifier, redirect_uri, token_endpoint`
  if (!attempt)
    throw apiError(
      'invalid',
      'oauth_state_expired',
      'This sign-in is unknown, was already used, expired, or was started in another browser. Start again from the connect page in this browser.',
      'state',
    )
  const flow = await loadFlow(deps.sql, attempt.flow_id)
  if (!flow) throw apiError('not-found', 'resource_not_found', 'The patient flow no longer exists')
  if (flow.status !== 'open') throw apiError('conflict', 'resource_conflict', `Flow ${flow.id} is ${flow.status}`)
  const record = (status: 'active' | 'failed', failureCode?: string, scopes?: string[]) =>
    recordConnection(deps.sql, {
      organizationId: flow.organization_id,
      patientId: flow.patient_id,
      fhirSourceId: attempt.fhir_source_id,
      flowId: flow.id,
      status,
      failureCode,
      scopes,
    })
  const error = query.get('error')
  const code = query.get('code')
  if (error || !code) {
    const failureCode = error === 'access_denied' ? 'user_denied' : 'oauth_callback_failed'
    return { flow, connection: await record('failed', failureCode) }
  }
  const source = await sourceCredentials(deps.sql, deps.cipher, attempt.fhir_source_id)
  let tokens: Awaited<ReturnType<typeof exchangeCode>>
  try {
    tokens = await exchangeCode(
      deps.outbound,
      { tokenEndpoint: attempt.token_endpoint, clientId: source.clientId ?? '', clientSecret: source.clientSecret },
      code,
      attempt.redirect_uri,
      deps.cipher.open(attempt.code_verifier),
    )
    if (!tokens.patient) throw new Error('the token response has no patient context')
  } catch (err) {
    log.warn('token exchange failed', { source: source.id, err: String((err as Error).message) })
    return { flow, connection: await record('failed', 'token_exchange_failed') }
  }
  const connection = await record('active', undefined, tokens.scope?.split(/\s+/).filter(Boolean))
  await saveTokens(deps.sql, deps.cipher, connection.id, tokens, attempt.token_endpoint)
  await deps.sql`update connection set sync_status = 'queued' where id = ${connection.id}`
  await deps.jobs.enqueue(ConnectSyncJob, { connectionId: connection.id })
  return { flow, connection }
}
