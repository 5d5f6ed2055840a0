// FHIR XML over HTTP for the tests: sending and reading XML, and the counts they check.
import { expect } from 'bun:test'
import { parseFhirXml } from '../shared/fhir/format/xml-parse'
import { toFhirXml } from '../shared/fhir/format/xml-write'
import { readJson, type TestServer } from './harness'

export const FHIR_XML = 'application/fhir+xml'
export const XML_CONTENT_TYPE = 'application/fhir+xml;charset=utf-8'
export const FHIR_NS = 'xmlns="http://hl7.org/fhir"'
export const XHTML_NS = 'xmlns="http://www.w3.org/1999/xhtml"'

let seq = 0
/** A value no other test uses (names, identifiers). */
export const unique = (label: string) => `${label}${Date.now().toString(36)}${++seq}`
export const uuid = () => `urn:uuid:${crypto.randomUUID()}`

/** The body of a FHIR XML response, parsed; checks the Content-Type and the root namespace. */
export async function readXml(res: Response): Promise<any> {
  expect(res.headers.get('content-type')).toBe(XML_CONTENT_TYPE)
  const text = await res.text()
  expect(text).toStartWith('<?xml')
  expect(text).toContain(FHIR_NS)
  return parseFhirXml(text)
}

/** An XML OperationOutcome with at least one issue. */
export async function xmlOutcome(res: Response): Promise<any> {
  const oo = await readXml(res)
  expect(oo.resourceType).toBe('OperationOutcome')
  expect(oo.issue.length).toBeGreaterThan(0)
  return oo
}

export const expressions = (oo: any): string[] => oo.issue.flatMap((i: any) => i.expression ?? [])
export const errors = (oo: any) => oo.issue.filter((i: any) => i.severity === 'error' || i.severity === 'fatal')
/** `Type/id` of a `.../Type/id/_history/n` location. */
export const target = (location: string) => location.replace(/^.*\/fhir\//, '').split('/_history/')[0]

/** Requests in XML against the test server, and the row counts that prove nothing was written. */
export function xmlClient(s: TestServer) {
  return {
    /** Sends `body` (FHIR XML text, or a JSON resource written as FHIR XML) and asks for XML back. */
    sendXml: (path: string, method: string, body: string | object, headers: Record<string, string> = {}): Promise<Response> =>
      s.fhirFetch(path, {
        method,
        body: typeof body === 'string' ? body : toFhirXml(body),
        headers: { 'content-type': FHIR_XML, accept: FHIR_XML, ...headers },
      }),
    /** GET with Accept: application/fhir+xml. */
    getXml: (path: string, headers: Record<string, string> = {}) => s.fhirFetch(path, { headers: { accept: FHIR_XML, ...headers } }),
    async rowCounts(): Promise<{ current: number; history: number }> {
      const [row] = await s.sql<{ current: number; history: number }[]>`
        select (select count(*)::int from resource) as current, (select count(*)::int from resource_history) as history`
      return row
    },
    /** Creates a resource through the JSON surface; the stored resource. */
    async createJson(resource: any): Promise<any> {
      const res = await s.fhirFetch(`/${resource.resourceType}`, { method: 'POST', json: resource })
      expect(res.status).toBe(201)
      return readJson(res)
    },
  }
}
