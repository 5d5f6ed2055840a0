// The patient picked a source: discover its SMART endpoints, remember the attempt (state, PKCE
// verifier sealed at rest, and the browser it must come back to) and answer the authorize URL.
// https://hl7.org/fhir/smart-app-launch/STU2/app-launch.html#obtain-authorization-code
// The state is bound to the browser (RFC 6749 §10.12; RFC 9700 §4.7.1): the callback is accepted only
// with the value whose hash is kept here, held by the browser that pressed Connect on the page (which
// itself needed the page's token).
import { createHash, randomBytes } from 'node:crypto'
import type { Sql } from '../db/client'
import type { Outbound } from '../net/client'
import { apiError } from '../patients/api-error'
import { sourceCredentials } from '../patients/fhir-sources'
import type { FlowRow } from '../patients/flows'
import type { SecretCipher } from '../secrets/cipher'
import { authorizeUrl, SMART_SCOPES } from './authorize-url'
import { createPkce } from './pkce'
import { discoverSmart } from './smart-discovery'

/** How long the patient has to come back from the source. */
export const ATTEMPT_TTL_MS = 30 * 60_000

export interface AuthorizationDeps {
  sql: Sql
  cipher: SecretCipher
  outbound: Outbound
}

export const bindingHash = (binding: string) => createHash('sha256').update(binding).digest('hex')

export async function startAuthorization(
  deps: AuthorizationDeps,
  flow: FlowRow,
  fhirSourceId: string,
  redirectUri: string,
  browserBinding: string,
): Promise<string> {
  const { sql, cipher } = deps
  if (flow.status !== 'open') throw apiError('conflict', 'resource_conflict', `Flow ${flow.id} is ${flow.status}`)
  if (flow.connection_id && flow.connection_id !== fhirSourceId)
    throw apiError('invalid', 'bad_request', `Flow ${flow.id} connects only to ${flow.connection_id}`, 'source_id')
  const source = await sourceCredentials(sql, cipher, fhirSourceId)
  if (!source.clientId) throw apiError('fault', 'config_missing', `FHIR source ${fhirSourceId} has no SMART client registered`)
  let smart: Awaited<ReturnType<typeof discoverSmart>>
  try {
    smart = await discoverSmart(deps.outbound, source.fhirBaseUrl)
  } catch (err) {
    throw apiError('fault', 'oauth_error', (err as Error).message)
  }
  const pkce = createPkce()
  const state = randomBytes(24).toString('base64url')
  await sql`
    insert into connect_attempt (state, flow_id, fhir_source_id, code_verifier, redirect_uri, token_endpoint, browser_binding)
    values (${state}, ${flow.id}, ${source.id}, ${cipher.seal(pkce.verifier)}, ${redirectUri}, ${smart.tokenEndpoint}, ${bindingHash(browserBinding)})`
  await sql`delete from connect_attempt where created_at < now() - interval '1 day'`
  return authorizeUrl({
    authorizationEndpoint: smart.authorizationEndpoint,
    clientId: source.clientId,
    redirectUri,
    state,
    aud: source.fhirBaseUrl,
    codeChallenge: pkce.challenge,
    scope: source.scopes ?? SMART_SCOPES,
  })
}
