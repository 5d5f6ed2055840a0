// A test EHR: a small SMART on FHIR authorization server (discovery, authorize with a consent page that
// can approve or deny, token with refresh and expiry the test can force) in front of a FHIR endpoint
// serving one Synthea patient. The FHIR endpoint is a second instance of our own server, loaded with one
// synthea-smart Bundle and reached through a proxy that checks the bearer token.
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { startTestServer, type TestServer } from '../harness'
import { dataPath } from '../data'

export interface TestEhrOptions {
  /** A synthea-smart file name (default: a small patient). */
  bundleFile?: string
  clientId?: string
  /** null: a public client (no secret). */
  clientSecret?: string | null
  accessTokenSeconds?: number
  /** false: no .well-known/smart-configuration (discovery must use the CapabilityStatement). */
  wellKnown?: boolean
}

export type Decision = 'page' | 'approve' | 'deny'

export interface TestEhr {
  origin: string
  fhirBase: string
  /** The patient's id at this EHR. */
  patientId: string
  clientId: string
  /** The client's secret; null: a public client (client_id in the token request body). */
  clientSecret: string | null
  /** Serves .well-known/smart-configuration (else discovery must use the CapabilityStatement). */
  wellKnown: boolean
  /** The CapabilityStatement lists Patient/$everything (the sync then uses it). */
  advertiseEverything: boolean
  /** Paths (and queries) of the FHIR requests served, in order. */
  paths: string[]
  /** The FHIR endpoint answers 503 to everything but metadata (a source that is down). */
  failFhir: boolean
  /** A hostile source: answers an authorized FHIR read itself when it returns a Response (path after /fhir, with the query). */
  intercept?: (path: string) => Response | undefined
  /** How /authorize answers: the consent page, or an immediate approval or denial. */
  decision: Decision
  counts: { authorize: number; codeGrants: number; refreshGrants: number; fhirRequests: number; rejected: number }
  /** Every access and refresh token issued and PKCE verifier received (secrets a client must not store in plain text). */
  secrets: string[]
  /** The backing FHIR server (our own server, second instance). */
  source: TestServer
  expireAccessTokens(): void
  revokeRefreshTokens(): void
  stop(): Promise<void>
}

/** The test EHR and webhook receivers listen on 127.0.0.1: a server that calls them must allow it. */
export const LOCAL_EHR = { OUTBOUND_ALLOW: '127.0.0.1' }

export const SMALL_PATIENT = 'Alberto_Atencio_fc712d1f-5a2e-4407-9c55-a2a2bad623c2.json'
export const LARGE_PATIENT = 'Austin_Franecki_f23eef30-acb2-49da-8091-159b61dc1ed5.json'

interface Pending {
  clientId: string
  redirectUri: string
  state: string
  challenge: string
  scope: string
}

export async function startTestEhr(opts: TestEhrOptions = {}): Promise<TestEhr> {
  const source = await startTestServer()
  const bundle = readFileSync(dataPath('synthea-smart', opts.bundleFile ?? SMALL_PATIENT), 'utf8')
  const loaded = await source.fhirFetch('', { method: 'POST', body: bundle, headers: { 'content-type': 'application/fhir+json' } })
  if (loaded.status !== 200) throw new Error(`test EHR: loading the bundle answered ${loaded.status}: ${await loaded.text()}`)
  const patients: any = (await (await source.fhirFetch('/Patient')).json()) as any
  const patientId = patients.entry[0].resource.id as string

  const clientId = opts.clientId ?? 'platform-client'
  const clientSecret = opts.clientSecret === undefined ? 'platform-secret' : opts.clientSecret
  const lifetime = opts.accessTokenSeconds ?? 3600
  const pending = new Map<string, Pending>()
  const codes = new Map<string, Pending & { used: boolean }>()
  const access = new Map<string, number>() // token -> expires at (ms)
  const refresh = new Set<string>()

  const issue = (scope: string) => {
    const accessToken = randomBytes(16).toString('hex')
    const refreshToken = randomBytes(16).toString('hex')
    access.set(accessToken, Date.now() + lifetime * 1000)
    refresh.add(refreshToken)
    ehr.secrets.push(accessToken, refreshToken)
    return { access_token: accessToken, token_type: 'Bearer', expires_in: lifetime, scope, refresh_token: refreshToken, patient: patientId }
  }

  const ehr: TestEhr = {
    origin: '',
    fhirBase: '',
    patientId,
    clientId,
    clientSecret,
    wellKnown: opts.wellKnown !== false,
    failFhir: false,
    advertiseEverything: false,
    paths: [],
    decision: 'page',
    counts: { authorize: 0, codeGrants: 0, refreshGrants: 0, fhirRequests: 0, rejected: 0 },
    secrets: [],
    source,
    expireAccessTokens() {
      for (const k of access.keys()) access.set(k, 0)
    },
    revokeRefreshTokens() {
      refresh.clear()
    },
    async stop() {
      server.stop(true)
      await source.stop()
    },
  }

  const redirectWith = (p: Pending, params: Record<string, string>) => {
    const u = new URL(p.redirectUri)
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v)
    u.searchParams.set('state', p.state)
    return Response.redirect(u.toString(), 302)
  }
  const approve = (p: Pending) => {
    const code = randomBytes(16).toString('hex')
    codes.set(code, { ...p, used: false })
    return redirectWith(p, { code })
  }
  const deny = (p: Pending) => redirectWith(p, { error: 'access_denied', error_description: 'The patient denied access' })

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      const path = url.pathname
      if (path === '/fhir/.well-known/smart-configuration') {
        if (!ehr.wellKnown) return new Response('not found', { status: 404 })
        return Response.json({
          authorization_endpoint: `${ehr.origin}/authorize`,
          token_endpoint: `${ehr.origin}/token`,
          token_endpoint_auth_methods_supported: ['client_secret_basic'],
          grant_types_supported: ['authorization_code', 'refresh_token'],
          scopes_supported: ['launch/patient', 'openid', 'fhirUser', 'offline_access', 'patient/*.read'],
          response_types_supported: ['code'],
          code_challenge_methods_supported: ['S256'],
          capabilities: [
            'launch-standalone',
            'client-public',
            'client-confidential-symmetric',
            'context-standalone-patient',
            'permission-offline',
            'permission-patient',
          ],
        })
      }
      if (path === '/authorize' && req.method === 'GET') return authorize(url)
      if (path === '/authorize/decision' && req.method === 'POST') {
        const form = await req.formData()
        const p = pending.get(String(form.get('request')))
        if (!p) return new Response('unknown authorization request', { status: 400 })
        pending.delete(String(form.get('request')))
        return form.get('decision') === 'approve' ? approve(p) : deny(p)
      }
      if (path === '/token' && req.method === 'POST') return token(req)
      if (path.startsWith('/fhir')) return proxy(req, url)
      return new Response('not found', { status: 404 })
    },
  })
  ehr.origin = `http://127.0.0.1:${server.port}`
  ehr.fhirBase = `${ehr.origin}/fhir`

  function authorize(url: URL): Response {
    ehr.counts.authorize++
    const q = Object.fromEntries(url.searchParams)
    if (q.response_type !== 'code' || q.client_id !== clientId || !q.redirect_uri || !q.state)
      return new Response('invalid authorization request', { status: 400 })
    if (q.code_challenge_method !== 'S256' || !q.code_challenge) return new Response('PKCE S256 required', { status: 400 })
    if (q.aud !== ehr.fhirBase) return new Response(`aud must be ${ehr.fhirBase}`, { status: 400 })
    const p: Pending = { clientId: q.client_id, redirectUri: q.redirect_uri, state: q.state, challenge: q.code_challenge, scope: q.scope ?? '' }
    if (ehr.decision === 'approve') return approve(p)
    if (ehr.decision === 'deny') return deny(p)
    const id = randomBytes(8).toString('hex')
    pending.set(id, p)
    const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test EHR: share your records?</title></head>
<body><main><h1>Test EHR</h1><p>An application asks to read your health records (${escape(p.scope)}).</p>
<form method="post" action="/authorize/decision"><input type="hidden" name="request" value="${id}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button></form></main></body></html>`
    return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } })
  }

  async function token(req: Request): Promise<Response> {
    const form = new URLSearchParams(await req.text())
    const fail = (error: string, status = 400) => Response.json({ error }, { status })
    if (ehr.clientSecret) {
      const basic = /^Basic (.+)$/.exec(req.headers.get('authorization') ?? '')?.[1]
      const [id, secret] = basic ? Buffer.from(basic, 'base64').toString().split(':').map(decodeURIComponent) : []
      if (id !== clientId || secret !== ehr.clientSecret) return fail('invalid_client', 401)
    } else if (form.get('client_id') !== clientId) return fail('invalid_client', 401)
    if (form.get('grant_type') === 'authorization_code') {
      const c = codes.get(form.get('code') ?? '')
      if (!c || c.used) return fail('invalid_grant')
      c.used = true
      if (c.redirectUri !== form.get('redirect_uri')) return fail('invalid_grant')
      const verifier = form.get('code_verifier') ?? ''
      ehr.secrets.push(verifier)
      if (createHash('sha256').update(verifier).digest('base64url') !== c.challenge) return fail('invalid_grant')
      ehr.counts.codeGrants++
      return Response.json(issue(c.scope))
    }
    if (form.get('grant_type') === 'refresh_token') {
      const old = form.get('refresh_token') ?? ''
      if (!refresh.has(old)) return fail('invalid_grant')
      refresh.delete(old) // rotated: the client must keep the new one
      ehr.counts.refreshGrants++
      return Response.json(issue('launch/patient openid fhirUser offline_access patient/*.read'))
    }
    return fail('unsupported_grant_type')
  }

  async function proxy(req: Request, url: URL): Promise<Response> {
    const rest = url.pathname.slice('/fhir'.length)
    const isMetadata = rest === '/metadata'
    if (!isMetadata) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.get('authorization') ?? '')?.[1]
      const expires = bearer ? access.get(bearer) : undefined
      if (!expires || expires < Date.now()) {
        ehr.counts.rejected++
        return Response.json({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'login' }] }, { status: 401 })
      }
      if (req.method !== 'GET') return new Response('read only', { status: 405 })
      if (ehr.failFhir) return Response.json({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'transient' }] }, { status: 503 })
    }
    ehr.counts.fhirRequests++
    ehr.paths.push(`${rest}${url.search}`)
    const intercepted = isMetadata ? undefined : ehr.intercept?.(`${rest}${url.search}`)
    if (intercepted) return intercepted
    const res = await source.fhirFetch(`${rest}${url.search}`, { headers: { accept: 'application/fhir+json' } })
    let text = (await res.text()).replaceAll(source.fhir, ehr.fhirBase)
    if (isMetadata && res.ok) {
      const cs = JSON.parse(text)
      cs.rest[0].security = {
        extension: [
          {
            url: 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris',
            extension: [
              { url: 'authorize', valueUri: `${ehr.origin}/authorize` },
              { url: 'token', valueUri: `${ehr.origin}/token` },
            ],
          },
        ],
        service: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR' }] }],
      }
      if (ehr.advertiseEverything) {
        const patient = cs.rest[0].resource.find((r: any) => r.type === 'Patient')
        patient.operation = [...(patient.operation ?? []), { name: 'everything', definition: 'http://hl7.org/fhir/OperationDefinition/Patient-everything' }]
      }
      text = JSON.stringify(cs)
    }
    return new Response(text, { status: res.status, headers: { 'content-type': res.headers.get('content-type') ?? 'application/fhir+json' } })
  }

  return ehr
}

function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
