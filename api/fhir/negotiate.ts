// Content negotiation as HAPI does it: `_format` overrides Accept (q-values honoured), request bodies by
// Content-Type, JSON by default, a readable HTML page for a browser. https://hl7.org/fhir/R4/http.html#mime-type
import { AppError } from '../../shared/errors'
import { parseFhirXml } from '../../shared/fhir/format/xml-parse'
import { parseFhirJsonRequest } from '../../shared/fhir/format/json'

export type Format = 'json' | 'xml'

/**
 * HAPI's lenient EncodingEnum.forContentType: the FHIR media types, their legacy `+fhir` forms, the
 * plain `json`/`xml`, `application/json|xml` and `text/json|xml`, each also with its `+` read as a space
 * (a `+` left unescaped in a query string, hapi-fhir #346).
 */
const ENCODINGS: Record<string, Format> = {}
for (const [name, f] of [
  ['json', 'json'],
  ['application/fhir+json', 'json'],
  ['application/json+fhir', 'json'],
  ['application/json', 'json'],
  ['text/json', 'json'],
  ['xml', 'xml'],
  ['application/fhir+xml', 'xml'],
  ['application/xml+fhir', 'xml'],
  ['application/xml', 'xml'],
  ['text/xml', 'xml'],
] as const) {
  ENCODINGS[name] = f
  ENCODINGS[name.replace('+', ' ')] = f
}

/** The encoding a `_format` value or a media type names (parameters such as `;charset` ignored). */
export function encodingOf(value: string): Format | undefined {
  return ENCODINGS[value.split(';')[0].trim().toLowerCase()]
}

/**
 * The response encoding (HAPI: RestfulServerUtils.determineResponseEncodingNoDefault, then the server's
 * default): a `_format` naming one wins, else the Accept media type of highest q that names one, else
 * JSON. An unknown `_format` or an Accept naming no FHIR encoding is not an error: HAPI answers in its
 * default encoding.
 */
export function responseFormat(formatParam: string | null, accept: string | null): Format {
  const named = formatParam ? encodingOf(formatParam) : undefined
  if (named) return named
  let best: { f: Format; q: number } | undefined
  for (const { mime, q } of acceptedTypes(accept)) {
    const f = ENCODINGS[mime]
    if (f && q > 0 && (!best || q > best.q)) best = { f, q }
  }
  return best?.f ?? 'json'
}

/**
 * Whether the response is the readable HTML page HAPI's ResponseHighlighterInterceptor (registered by the
 * starter) serves a browser: `_format=html` (or `html/json`, `html/xml`) asks for it; otherwise a GET whose
 * Accept ranks text/html highest, and that is not an AJAX call (X-Requested-With, Origin). Another
 * `_format` means no page.
 */
export function wantsHtml(formatParam: string | null, accept: string | null, method: string, ajax: boolean): boolean {
  if (formatParam) return htmlEncoding(formatParam) !== undefined
  if (ajax || method !== 'GET') return false
  const types = acceptedTypes(accept)
  const top = Math.max(...types.map((t) => t.q))
  return types.some((t) => t.q === top && t.q > 0 && t.mime === 'text/html')
}

/** The FHIR encoding shown in the HTML page a `_format` asks for (`html/xml` shows XML); undefined when it asks for none. */
export function htmlEncoding(formatParam: string): Format | undefined {
  const v = formatParam.split(';')[0].trim().toLowerCase()
  if (v === 'html' || v === 'text/html' || v === 'html/json') return 'json'
  if (v === 'html/xml') return 'xml'
  return undefined
}

function acceptedTypes(accept: string | null): { mime: string; q: number }[] {
  if (!accept) return []
  return accept.split(',').map((part) => {
    const [type, ...params] = part.trim().split(';')
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return { mime: type.trim().toLowerCase(), q: qp ? Number(qp.slice(2)) : 1 }
  })
}

/** `_pretty=true`, or `pretty=true` as an Accept parameter. */
export function wantsPretty(prettyParam: string | null, accept: string | null, dflt: boolean): boolean {
  if (prettyParam !== null) return prettyParam === 'true'
  if (accept && /;\s*pretty\s*=\s*true/i.test(accept)) return true
  return dflt
}

/** Parses a request body by its Content-Type (sniffing JSON or XML when there is none). */
export function parseBody(text: string, contentType: string | null): unknown {
  const start = text.trimStart()
  const kind = formatOf(start === '' ? undefined : start[0], contentType)
  return kind === undefined ? undefined : parseAs(kind, text)
}

/**
 * The format of a request body by its Content-Type, sniffed from its first character that is not blank
 * when there is none; undefined for an empty body. Throws 400 for a Content-Type that is not FHIR's.
 */
export function formatOf(first: string | undefined, contentType: string | null): Format | undefined {
  if (first === undefined) return undefined
  const mime = (contentType ?? '').split(';')[0].trim().toLowerCase()
  const kind = mime ? bodyKind(mime) : first === '<' ? 'xml' : 'json'
  // HAPI (ResourceParameter.loadResourceFromRequest): 400, HAPI-0446 for a form, HAPI-0449 for any other
  // type that is not FHIR's.
  if (!kind)
    throw new AppError(
      'invalid',
      `${mime === 'application/x-www-form-urlencoded' ? 'HAPI-0446' : 'HAPI-0449'}: Incorrect Content-Type header value of "${contentType}" was provided in the request. A FHIR Content-Type is required`,
    )
  return kind
}

/**
 * A body of a known format, parsed. With `textForwarded`, JSON is parsed without keeping decimals as
 * written: the caller only checks the structure and hands the text itself on (a Bundle for the workers),
 * so the scan for such numbers, about as costly as the parse, is skipped.
 */
export function parseAs(kind: Format, text: string, textForwarded = false): unknown {
  if (kind === 'xml') return parseFhirXml(text)
  return parseFhirJsonRequest(text, !textForwarded)
}

function bodyKind(mime: string): 'json' | 'xml' | undefined {
  const f = ENCODINGS[mime]
  if (f) return f
  if (mime === 'application/json-patch+json') return 'json'
  return undefined
}
