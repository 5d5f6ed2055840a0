// Transaction and batch Bundles for the tests: entry builders, and reading back what the server wrote.
import { expect } from 'bun:test'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { dataPath } from './data'
import { readJson, type TestServer } from './harness'

export const SYS = 'http://example.org/tx-test'
let seq = 0
/** An identifier value no other test uses. */
export const unique = (label: string) => `${label}-${Date.now().toString(36)}-${++seq}`
export const uuid = () => `urn:uuid:${crypto.randomUUID()}`

export const bundle = (type: string, entry: any[]) => ({ resourceType: 'Bundle', type, entry })
export const transaction = (entry: any[]) => bundle('transaction', entry)

export const post = (resource: any, fullUrl?: string, request: Record<string, string> = {}) => ({
  ...(fullUrl ? { fullUrl } : {}),
  resource,
  request: { method: 'POST', url: resource.resourceType, ...request },
})
export const put = (url: string, resource: any, request: Record<string, string> = {}) => ({ resource, request: { method: 'PUT', url, ...request } })
export const del = (url: string) => ({ request: { method: 'DELETE', url } })
export const get = (url: string) => ({ request: { method: 'GET', url } })

export const patient = (value: string, extra: Record<string, unknown> = {}) => ({ resourceType: 'Patient', identifier: [{ system: SYS, value }], ...extra })
export const organization = (value: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Organization',
  identifier: [{ system: SYS, value }],
  name: value,
  ...extra,
})
export const observation = (subject: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
  subject: { reference: subject },
  ...extra,
})

/** `Type/id` of a `Type/id/_history/n` location. */
export const target = (location: string) => location.split('/_history/')[0]

export async function postBundle(s: TestServer, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return s.fhirFetch('', { method: 'POST', json: body, headers })
}

export async function diagnostics(res: Response): Promise<string> {
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  return body.issue.map((i: any) => i.diagnostics ?? '').join('\n')
}

/** Diagnostics and expressions of an OperationOutcome: where it names the failing entry. */
export async function outcomeText(res: Response): Promise<string> {
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  return body.issue.flatMap((i: any) => [i.diagnostics ?? '', ...(i.expression ?? [])]).join('\n')
}

/** Rows of the resource and history tables: a failed transaction must leave both unchanged. */
export async function rows(s: TestServer): Promise<{ resource: number; history: number }> {
  const [r] = await s.sql<{ resource: number; history: number }[]>`
    select (select count(*) from resource)::int as resource, (select count(*) from resource_history)::int as history`
  return r
}

/** Current resources of `type` carrying the identifier value. */
export async function withIdentifier(s: TestServer, type: string, value: string): Promise<string[]> {
  const found = await s.sql<{ id: string }[]>`
    select r.id from resource r
    where r.res_type = ${type} and not r.deleted
      and exists (select 1 from jsonb_array_elements(r.content::jsonb -> 'identifier') i where i ->> 'value' = ${value})
    order by r.id`
  return found.map((r) => r.id)
}

export async function read(s: TestServer, ref: string): Promise<any> {
  const res = await s.fhirFetch(`/${ref}`)
  expect(res.status).toBe(200)
  return res.json()
}

export async function create(s: TestServer, resource: any): Promise<any> {
  const res = await s.fhirFetch(`/${resource.resourceType}`, { method: 'POST', json: resource })
  expect(res.status).toBe(201)
  return res.json()
}

/** A transaction that must succeed: its response Bundle. */
export async function commit(s: TestServer, entries: any[], headers: Record<string, string> = {}): Promise<any> {
  const res = await postBundle(s, transaction(entries), headers)
  const body = await readJson(res)
  if (res.status !== 200) throw new Error(`transaction answered ${res.status}: ${JSON.stringify(body)}`)
  expect(body.resourceType).toBe('Bundle')
  expect(body.type).toBe('transaction-response')
  expect(body.entry).toHaveLength(entries.length)
  return body
}

/** A transaction that must fail with `status`, name entry `index` and write nothing; its diagnostics. */
export async function rejected(s: TestServer, body: unknown, status: number, index?: number): Promise<string> {
  const before = await rows(s)
  const res = await postBundle(s, body)
  expect(res.status).toBe(status)
  const text = await outcomeText(res)
  if (index !== undefined) expect(text).toContain(`Bundle.entry[${index}]`)
  expect(await rows(s)).toEqual(before)
  return text
}

/** The `n` largest synthea-smart Bundles. */
export function largestBundles(n: number): string[] {
  const dir = dataPath('synthea-smart')
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).size - statSync(a).size)
    .slice(0, n)
}
