// Helpers of the patient API tests: organizations and keys through the admin endpoints, and fetch()
// with an organization's key and JSON bodies.
import { expect } from 'bun:test'
import { ADMIN_KEY, type TestServer, readJson } from './harness'

export interface Org {
  id: string
  key: string
  keyId: string
}

export interface CallInit extends Omit<RequestInit, 'body'> {
  json?: unknown
  body?: string
  /** The organization key to send; null sends none. */
  key?: string | null
}

export function adminFetch(s: TestServer, path: string, init: CallInit = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  if (init.key !== null) headers.set('authorization', `Bearer ${init.key ?? ADMIN_KEY}`)
  if (init.json !== undefined) headers.set('content-type', 'application/json')
  return fetch(`${s.base}${path}`, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body })
}

/** A new organization with one API key. */
export async function createOrg(s: TestServer, name = 'Acme'): Promise<Org> {
  const org = await readJson(await adminFetch(s, '/admin/organizations', { method: 'POST', json: { name } }))
  expect(org.id).toStartWith('org_')
  const key = await readJson(await adminFetch(s, `/admin/organizations/${org.id}/api-keys`, { method: 'POST', json: { label: 'test' } }))
  expect(key.key).toBeString()
  return { id: org.id, key: key.key, keyId: key.id }
}

/** fetch() against the API root with the organization's key. */
export function call(s: TestServer, org: Org, path: string, init: CallInit = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  if (init.key !== null) headers.set('authorization', `Bearer ${init.key ?? org.key}`)
  if (init.json !== undefined) headers.set('content-type', 'application/json')
  return fetch(`${s.base}${path}`, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body })
}

/** Expects the error envelope with this status, type and code (and param when given); returns it. */
export async function expectError(res: Response, status: number, type: string, code: string, param?: string | null): Promise<any> {
  const body = await readJson(res)
  expect({ status: res.status, type: body.error?.type, code: body.error?.code }).toEqual({ status, type, code })
  expect(Object.keys(body.error).sort()).toEqual(['code', 'doc_url', 'message', 'param', 'request_id', 'type'])
  expect(body.error.request_id).toBe(res.headers.get('x-request-id') as string)
  if (param !== undefined) expect(body.error.param).toBe(param)
  return body.error
}

/** A FHIR source in the catalog (admin endpoint). */
export async function createSource(s: TestServer, fields: Record<string, unknown> = {}): Promise<any> {
  const n = Math.random().toString(36).slice(2, 8)
  const res = await adminFetch(s, '/admin/fhir-sources', {
    method: 'POST',
    json: { name: `Source ${n}`, type: 'epic', fhir_base_url: `https://ehr-${n}.example.com/fhir/r4`, ...fields },
  })
  expect(res.status).toBe(200)
  return readJson(res)
}
