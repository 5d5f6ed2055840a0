// Content negotiation as HAPI does it: `_format` overrides Accept (q-values honoured), request bodies by
// Content-Type, JSON by default. https://hl7.org/fhir/R4/http.html#mime-type
import { AppError } from '../../shared/errors'
import { parseFhirXml } from '../../shared/fhir/format/xml-parse'
import { jsonSyntaxError, parseFhirJson } from '../../shared/fhir/format/json'

export type Format = 'json' | 'xml'

const FORMAT_ALIASES: Record<string, Format> = {
  json: 'json',
  'application/fhir+json': 'json',
  'application/json': 'json',
  'application/json+fhir': 'json',
  xml: 'xml',
  'application/fhir+xml': 'xml',
  'application/xml': 'xml',
  'application/xml+fhir': 'xml',
  'text/xml': 'xml',
}

/** The response format; throws 406 when neither `_format` nor Accept names one we produce. */
export function responseFormat(formatParam: string | null, accept: string | null): Format {
  if (formatParam) {
    const f = FORMAT_ALIASES[formatParam.split(';')[0].trim().toLowerCase()]
    if (!f) throw new AppError('not-acceptable', `Invalid _format parameter value: "${formatParam}"`)
    return f
  }
  if (!accept) return 'json'
  let best: { f: Format; q: number } | undefined
  for (const part of accept.split(',')) {
    const [type, ...params] = part.trim().split(';')
    const mime = type.trim().toLowerCase()
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    const q = qp ? Number(qp.slice(2)) : 1
    if (!(q > 0)) continue
    const f = FORMAT_ALIASES[mime] ?? (mime === '*/*' || mime === 'application/*' ? 'json' : undefined)
    if (f && (!best || q > best.q)) best = { f, q }
  }
  if (!best) throw new AppError('not-acceptable', `HAPI-1836: None of the media types in the Accept header can be produced: ${accept}`)
  return best.f
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
 * when there is none; undefined for an empty body. Throws 415 for a Content-Type that is not FHIR's.
 */
export function formatOf(first: string | undefined, contentType: string | null): Format | undefined {
  if (first === undefined) return undefined
  const mime = (contentType ?? '').split(';')[0].trim().toLowerCase()
  const kind = mime ? bodyKind(mime) : first === '<' ? 'xml' : 'json'
  if (!kind)
    throw new AppError(
      'unsupported',
      `HAPI-0446: Incorrect Content-Type header value of "${contentType}" was provided in the request. A FHIR Content-Type is required`,
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
  try {
    return textForwarded ? JSON.parse(text) : parseFhirJson(text)
  } catch (err) {
    throw jsonSyntaxError(err)
  }
}

function bodyKind(mime: string): 'json' | 'xml' | undefined {
  const f = FORMAT_ALIASES[mime]
  if (f) return f
  if (mime === 'application/json-patch+json') return 'json'
  return undefined
}
