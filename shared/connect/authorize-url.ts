// The standalone-launch authorization request.
// https://hl7.org/fhir/smart-app-launch/STU2/app-launch.html#obtain-authorization-code
export const SMART_SCOPES = 'launch/patient openid fhirUser offline_access patient/*.read'

export interface AuthorizeRequest {
  authorizationEndpoint: string
  clientId: string
  redirectUri: string
  state: string
  /** The FHIR base URL of the source (`aud`). */
  aud: string
  codeChallenge: string
  scope?: string
}

export function authorizeUrl(r: AuthorizeRequest): string {
  const url = new URL(r.authorizationEndpoint)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', r.clientId)
  url.searchParams.set('redirect_uri', r.redirectUri)
  url.searchParams.set('scope', r.scope ?? SMART_SCOPES)
  url.searchParams.set('state', r.state)
  url.searchParams.set('aud', r.aud)
  url.searchParams.set('code_challenge', r.codeChallenge)
  url.searchParams.set('code_challenge_method', 'S256')
  return url.toString()
}
