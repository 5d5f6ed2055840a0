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

const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/

/**
 * JSON.parse that keeps the written form of numbers JavaScript would reformat. The reviver costs a call
 * per value, so it runs only when a scan of the text finds such a number (most documents have none).
 */
export function parseFhirJson(text: string): any {
  return needsReviver(text) ? JSON.parse(text, keepDecimal) : JSON.parse(text)
}

// Scans the JSON text for a number token JavaScript would write differently (`1.50`, `1e2`, digits beyond
// double precision), skipping strings by jumping from quote to quote.
function needsReviver(text: string): boolean {
  const n = text.length
  let i = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === 34 /* " */) {
      let j = text.indexOf('"', i + 1)
      while (j > 0) {
        let backslashes = 0
        for (let k = j - 1; text.charCodeAt(k) === 92 /* \ */; k--) backslashes++
        if (backslashes % 2 === 0) break
        j = text.indexOf('"', j + 1)
      }
      if (j < 0) return true // malformed: let JSON.parse report it
      i = j + 1
    } else if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      let j = i + 1
      while (j < n) {
        const d = text.charCodeAt(j)
        if ((d >= 48 && d <= 57) || d === 46 || d === 101 || d === 69 || d === 43 || d === 45) j++
        else break
      }
      const token = text.slice(i, j)
      if (String(Number(token)) !== token) return true
      i = j
    } else i++
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
