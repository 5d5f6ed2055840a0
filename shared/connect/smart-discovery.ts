// SMART App Launch discovery: the source's authorize and token endpoints, from
// `{fhir_base_url}/.well-known/smart-configuration`, falling back to the CapabilityStatement's
// oauth-uris extension. https://hl7.org/fhir/smart-app-launch/STU2/conformance.html
// Through the outbound client: a redirect is followed (a few hops, each checked like the first).
import { AppError } from '../errors'
import type { Outbound } from '../net/client'
import { OutboundRefused } from '../net/target'

export interface SmartConfiguration {
  authorizationEndpoint: string
  tokenEndpoint: string
  capabilities: string[]
  /** Where it was found. */
  from: 'well-known' | 'capability-statement'
}

const OAUTH_URIS = 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris'
const REDIRECTS = 3

export async function discoverSmart(outbound: Outbound, fhirBaseUrl: string): Promise<SmartConfiguration> {
  const base = fhirBaseUrl.replace(/\/+$/, '')
  const getJson = async (url: string): Promise<any> => {
    try {
      const res = await outbound.fetch(url, { headers: { accept: 'application/json, application/fhir+json' }, followRedirects: REDIRECTS })
      if (!res.ok) {
        await res.discard()
        return undefined
      }
      return await res.json()
    } catch (err) {
      // A refused target is the answer (a clear reason), not a missing configuration.
      if (err instanceof OutboundRefused) throw new AppError('fault', `SMART discovery refused: ${err.message}`, { details: { code: 'oauth_error' } })
      return undefined
    }
  }
  const wellKnown = await getJson(`${base}/.well-known/smart-configuration`)
  if (wellKnown?.authorization_endpoint && wellKnown?.token_endpoint) {
    return {
      authorizationEndpoint: String(wellKnown.authorization_endpoint),
      tokenEndpoint: String(wellKnown.token_endpoint),
      capabilities: Array.isArray(wellKnown.capabilities) ? wellKnown.capabilities.map(String) : [],
      from: 'well-known',
    }
  }
  // https://hl7.org/fhir/smart-app-launch/1.0.0/conformance/index.html#declaring-support-for-oauth2-endpoints
  const cs = await getJson(`${base}/metadata`)
  for (const rest of cs?.rest ?? []) {
    for (const ext of rest?.security?.extension ?? []) {
      if (ext?.url !== OAUTH_URIS) continue
      const uri = (name: string) => (ext.extension ?? []).find((e: any) => e?.url === name)?.valueUri as string | undefined
      const authorize = uri('authorize')
      const token = uri('token')
      if (authorize && token) return { authorizationEndpoint: authorize, tokenEndpoint: token, capabilities: [], from: 'capability-statement' }
    }
  }
  throw new AppError('fault', `No SMART configuration at ${base} (neither .well-known/smart-configuration nor the CapabilityStatement's oauth-uris)`, {
    details: { code: 'oauth_error' },
  })
}
