// FhirResponse -> HTTP Response: the negotiated format, pretty printing, and the headers each
// interaction sets (ETag, Last-Modified, Location, Content-Location).
import { toFhirXml } from '../../shared/fhir/format/xml-write'
import type { FhirResponse } from '../../shared/fhir/request'
import { HTML_HEADERS, htmlPage } from './html'
import type { Format } from './negotiate'
import { parseFhirJson } from '../../shared/fhir/format/json'
import type { XmlRenderCache } from '../../shared/fhir/format/xml-render-cache'
import { bodyResponse } from '../http/response'

const CONTENT_TYPE: Record<Format, string> = {
  json: 'application/fhir+json;charset=utf-8',
  xml: 'application/fhir+xml;charset=utf-8',
}

export interface RenderOptions {
  format: Format
  pretty: boolean
  /** The response as a readable HTML page (html.ts) showing it in `format`; `requestUrl` is then required. */
  html?: boolean
  requestUrl?: string
  head?: boolean
  requestId?: string
  /** XML written from stored JSON text, reused while that text is read again. */
  xmlCache?: XmlRenderCache
  /** Headers of the HTTP edge (the rate limit's), over the interaction's own. */
  extraHeaders?: Record<string, string>
}

export function render(res: FhirResponse, opts: RenderOptions): Response {
  const headers: Record<string, string> = { ...(res.headers ?? {}) }
  if (opts.extraHeaders) for (const k in opts.extraHeaders) headers[k] = opts.extraHeaders[k]
  if (opts.requestId) headers['x-request-id'] = opts.requestId
  if (res.etag) headers.etag = res.etag
  if (res.lastModified) headers['last-modified'] = res.lastModified.toUTCString()
  if (res.location) headers.location = res.location
  if (res.contentLocation) headers['content-location'] = res.contentLocation
  const body = res.status === 304 ? undefined : serialize(res, opts)
  if (opts.html && res.status !== 304 && opts.requestUrl) {
    const page = htmlPage(body, opts.format, res.status, opts.requestUrl)
    return bodyResponse(opts.head ? null : page, { status: res.status, headers: { ...headers, ...HTML_HEADERS } })
  }
  if (body !== undefined) headers['content-type'] = CONTENT_TYPE[opts.format]
  return bodyResponse(opts.head ? null : body, { status: res.status, headers })
}

function serialize(res: FhirResponse, opts: RenderOptions): string | undefined {
  if (res.resource === undefined && res.text === undefined) return undefined
  // The stored JSON text goes out as is unless it must be re-shaped.
  if (opts.format === 'json' && !opts.pretty && res.text !== undefined) return res.text
  // Only a stored version (it has an ETag) is read again as it is; a Bundle's text is made per request.
  if (opts.format === 'xml' && !opts.pretty && res.text !== undefined && res.resource === undefined && res.etag && opts.xmlCache)
    return opts.xmlCache.xmlOf(res.text)
  const resource = res.resource ?? parseFhirJson(res.text as string)
  if (opts.format === 'xml') return toFhirXml(resource, { pretty: opts.pretty })
  return opts.pretty ? JSON.stringify(resource, null, 2) : JSON.stringify(resource)
}
