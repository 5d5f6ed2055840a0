// FHIR JSON with decimals kept as written: `1.50` stays `1.50` (https://hl7.org/fhir/R4/json.html#primitive:
// "decimal values ... the precision is significant"). A number whose text differs from JavaScript's own
// rendering is held as JSON.rawJSON(text), which JSON.stringify writes back verbatim.

// JSON.rawJSON / JSON.isRawJSON and the reviver's source text (TC39 "JSON.parse source text access"),
// which Bun implements; TypeScript's lib does not declare them yet.
declare global {
  interface JSON {
    rawJSON(text: string): object
    isRawJSON(value: unknown): boolean
  }
}

import { AppError } from '../../errors'
import { checkJsonText } from './json-check'

const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/

/**
 * JSON.parse that keeps the written form of numbers JavaScript would reformat. The reviver costs a call
 * per value, so it runs only when a scan of the text finds such a number (most documents have none).
 */
export function parseFhirJson(text: string): any {
  return needsReviver(text) ? JSON.parse(text, keepDecimal) : JSON.parse(text)
}

/** parseFhirJson of a document that is not a request body (an NDJSON line): a text that is not JSON is HAPI's 400. */
export function parseFhirJsonBody(text: string): any {
  let parsed: any
  try {
    parsed = parseFhirJson(text)
  } catch (err) {
    throw jsonSyntaxError(err)
  }
  checkJsonText(text, parsed)
  return parsed
}

/** parseFhirJson of an HTTP request body (the resource of a write, a Bundle): a text that is not JSON is HAPI's 400 HAPI-0450. */
export function parseFhirJsonRequest(text: string, reviveDecimals = true): any {
  let parsed: any
  try {
    parsed = reviveDecimals ? parseFhirJson(text) : JSON.parse(text)
  } catch (err) {
    throw unparseableJsonRequest(err)
  }
  if (reviveDecimals) checkJsonText(text, parsed) // a Bundle forwarded as text is checked where it is read
  return parsed
}

/** HAPI's 400 for JSON that is not JSON (its parser's message, JsonParser). */
export function jsonSyntaxError(err: unknown): AppError {
  return new AppError('invalid', `HAPI-1861: Failed to parse JSON encoded FHIR content: ${(err as Error).message}`)
}

/** HAPI's 400 for a request body that is not JSON: the parser's message wrapped by ResourceParameter. */
function unparseableJsonRequest(err: unknown): AppError {
  return new AppError('invalid', `HAPI-0450: Failed to parse request body as JSON resource. Error was: ${jsonSyntaxError(err).message}`)
}

// A candidate number token: what JSON puts after whitespace, `:`, `,` or `[` (or at the start), starting
// with `-` or a digit, and followed by whitespace and `,` `]` `}` or the end. Every number of a valid
// document is a candidate; a candidate inside a string (digits right after `: ` and right before `,`)
// only costs a check. The lookbehind rejects every start inside a run of digits, so the scan stays
// linear. On Synthea Bundles it is about twice as fast as a character loop that skips strings.
const NUMBER_CANDIDATE = /(?<![^\s:,[])-?[0-9][0-9.eE+-]*(?=[ \t\n\r]*(?:[,\]}]|$))/g

// True when the text holds a number token JavaScript would write differently (`1.50`, `1e2`, `-0`,
// digits beyond double precision).
function needsReviver(text: string): boolean {
  NUMBER_CANDIDATE.lastIndex = 0
  for (let m = NUMBER_CANDIDATE.exec(text); m !== null; m = NUMBER_CANDIDATE.exec(text)) {
    const token = m[0]
    if (String(Number(token)) !== token) return true
  }
  return false
}

function keepDecimal(this: unknown, _key: string, value: unknown, ctx?: { source?: string }): unknown {
  if (typeof value !== 'number' || ctx?.source === undefined) return value
  const src = ctx.source
  return src === String(value) || !NUMBER.test(src) ? value : JSON.rawJSON(src)
}

/** A number for a decimal written as written (`1.50`) or as a plain number; undefined otherwise. */
export function decimalValue(v: unknown): number | undefined {
  if (typeof v === 'number') return v
  if (JSON.isRawJSON(v)) return Number((v as { rawJSON: string }).rawJSON)
  return undefined
}

/** The written text of a number value (raw or plain). */
export function numberText(v: unknown): string | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : undefined
  if (JSON.isRawJSON(v)) return (v as { rawJSON: string }).rawJSON
  return undefined
}

/** A number value for decimal text read elsewhere (XML): raw when JavaScript would reformat it. */
export function decimalFromText(text: string): number | object {
  const n = Number(text)
  return String(n) === text ? n : JSON.rawJSON(text)
}

/** A deep copy of JSON data; raw numbers are immutable and shared (structuredClone rejects them). */
export function cloneJson<T>(v: T): T {
  if (Array.isArray(v)) return v.map(cloneJson) as T
  if (v && typeof v === 'object' && !JSON.isRawJSON(v)) {
    const out: any = {}
    for (const k in v) out[k] = cloneJson((v as any)[k])
    return out
  }
  return v
}
