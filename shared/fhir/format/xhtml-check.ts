// The narrative div as FHIR XML carries it: well-formed XHTML with a <div> root in the XHTML namespace.
// A div without a namespace gets it declared, as HAPI FHIR does (XhtmlDt); anything else is refused,
// since a broken div would break (or inject into) the document around it.
// https://hl7.org/fhir/R4/narrative.html#xhtml
import { invalid } from '../../errors'
import { XHTML_NS } from './xml-names'
import { readXml } from './xml-reader'

/** Far beyond any real narrative; the scanner leaves deeper XHTML to the full reader. */
const MAX_DEPTH = 1000
// https://www.w3.org/TR/xml/#NT-Char: C0 controls other than tab, LF and CR, and U+FFFE/U+FFFF.
const ILLEGAL_CHAR = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/

/**
 * The div in canonical form: the root element only (surrounding whitespace dropped), with the XHTML
 * namespace declared. Throws `invalid` at `path` when it is not a well-formed XHTML div.
 */
export function narrativeXhtml(div: unknown, path: string): string {
  if (typeof div !== 'string') throw invalid(`Narrative div must be a string`, path)
  if (ILLEGAL_CHAR.test(div)) throw invalid(`Narrative div holds a character XML cannot carry`, path)
  const fast = scanDiv(div)
  if (fast) {
    const xhtml = fast.start === 0 && fast.end === div.length ? div : div.slice(fast.start, fast.end)
    return fast.declared ? xhtml : `<div xmlns="${XHTML_NS}"` + xhtml.slice(4)
  }
  return readDiv(div, path)
}

/** The problem with a narrative div, or undefined when it is fine (for validation). */
export function narrativeProblem(div: unknown): string | undefined {
  try {
    narrativeXhtml(div, '')
    return undefined
  } catch (err) {
    return (err as Error).message
  }
}

// The full reader: every well-formedness error named, prefixes resolved.
function readDiv(div: string, path: string): string {
  let root
  try {
    root = readXml(div, { maxDepth: MAX_DEPTH })
  } catch (err) {
    throw invalid(`Narrative div is not well-formed XHTML: ${(err as Error).message}`, path)
  }
  if (root.name !== 'div') throw invalid(`Narrative must be a <div> element`, path)
  // https://www.w3.org/TR/xml/#sec-comments, which the reader does not check: no '--' in a comment.
  for (const m of div.matchAll(/<!--([\s\S]*?)-->/g)) {
    if (m[1].includes('--') || m[1].endsWith('-')) throw invalid(`Narrative div is not well-formed XHTML: '--' in a comment`, path)
  }
  const xhtml = root.start === 0 && root.end === div.length ? div : div.slice(root.start, root.end)
  if (root.ns === XHTML_NS) return xhtml
  if (root.ns !== '' || root.qname !== 'div') throw invalid(`Narrative div must be in the XHTML namespace`, path)
  return `<div xmlns="${XHTML_NS}"` + xhtml.slice(4)
}

interface Scan {
  start: number
  end: number
  /** Whether the root declares xmlns="http://www.w3.org/1999/xhtml". */
  declared: boolean
}

/**
 * A one-pass check for the XHTML narratives actually written: unprefixed ASCII names (xml:lang and
 * xml:space aside), quoted attributes without duplicates, the predefined entities and character
 * references, comments and CDATA. Returns undefined for anything else (prefixes, processing
 * instructions, a foreign root namespace, errors), which the full reader then decides on.
 */
function scanDiv(s: string): Scan | undefined {
  const n = s.length
  let i = skipSpace(s, 0)
  if (!s.startsWith('<div', i)) return undefined
  const start = i
  const open: string[] = []
  let declared = false
  for (;;) {
    // At a '<'.
    const c = s.charCodeAt(i + 1)
    if (c === 47 /* / */) {
      const end = nameEnd(s, i + 2)
      if (end < 0 || s.slice(i + 2, end) !== open.pop()) return undefined
      const gt = skipSpace(s, end)
      if (s.charCodeAt(gt) !== 62 /* > */) return undefined
      i = gt + 1
    } else if (c === 33 /* ! */) {
      if (s.startsWith('<!--', i)) {
        // https://www.w3.org/TR/xml/#sec-comments: no '--' inside.
        const dashes = s.indexOf('--', i + 4)
        if (dashes < 0 || s.charCodeAt(dashes + 2) !== 62) return undefined
        i = dashes + 3
      } else if (s.startsWith('<![CDATA[', i)) {
        const end = s.indexOf(']]>', i + 9)
        if (end < 0) return undefined
        i = end + 3
      } else return undefined
    } else {
      const end = nameEnd(s, i + 1)
      if (end < 0) return undefined
      const name = s.slice(i + 1, end)
      const attrs = scanAttributes(s, end, open.length === 0)
      if (!attrs) return undefined
      if (open.length === 0 && attrs.xmlns !== undefined) {
        if (attrs.xmlns !== XHTML_NS) return undefined
        declared = true
      }
      i = attrs.end
      if (!attrs.empty) {
        if (open.length >= MAX_DEPTH) return undefined
        open.push(name)
      }
    }
    if (open.length === 0) break
    const lt = s.indexOf('<', i)
    if (lt < 0 || !checkText(s, i, lt)) return undefined
    i = lt
  }
  if (skipSpace(s, i) !== n) return undefined
  return { start, end: i, declared }
}

/** After a name of [A-Za-z_][A-Za-z0-9._-]* starting at `i`; -1 when there is none. */
function nameEnd(s: string, i: number): number {
  const c = s.charCodeAt(i)
  if (!((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95)) return -1
  let j = i + 1
  for (;;) {
    const d = s.charCodeAt(j)
    if ((d >= 97 && d <= 122) || (d >= 65 && d <= 90) || (d >= 48 && d <= 57) || d === 95 || d === 45 || d === 46) j++
    else return j
  }
}

/** The attributes of a start tag from `i` (after its name) to its '>' (`end` is after it). */
function scanAttributes(s: string, i: number, root: boolean): { end: number; empty: boolean; xmlns?: string } | undefined {
  const names: string[] = []
  let xmlns: string | undefined
  for (;;) {
    const j = skipSpace(s, i)
    const c = s.charCodeAt(j)
    if (c === 62 /* > */) return { end: j + 1, empty: false, xmlns }
    if (c === 47 /* / */) return s.charCodeAt(j + 1) === 62 ? { end: j + 2, empty: true, xmlns } : undefined
    if (j === i) return undefined // attributes are separated by whitespace
    let end = nameEnd(s, j)
    if (end < 0) return undefined
    if (s.charCodeAt(end) === 58 /* : */) {
      // Only the predefined xml: prefix (xml:lang, xml:space); other prefixes need the full reader.
      if (end !== j + 3 || !s.startsWith('xml', j)) return undefined
      end = nameEnd(s, end + 1)
      if (end < 0) return undefined
    }
    const name = s.slice(j, end)
    if (names.includes(name)) return undefined
    names.push(name)
    const eq = skipSpace(s, end)
    if (s.charCodeAt(eq) !== 61 /* = */) return undefined
    const q = skipSpace(s, eq + 1)
    const quote = s.charCodeAt(q)
    if (quote !== 34 && quote !== 39) return undefined
    const close = s.indexOf(quote === 34 ? '"' : "'", q + 1)
    if (close < 0) return undefined
    for (let k = q + 1; k < close; k++) {
      const v = s.charCodeAt(k)
      if (v === 60 /* < */) return undefined
      if (v === 38 /* & */ && (k = referenceEnd(s, k)) < 0) return undefined
    }
    if (name === 'xmlns') {
      if (!root) return undefined // a default namespace below the root: the full reader decides
      xmlns = s.slice(q + 1, close)
    }
    i = close + 1
  }
}

/** Whether text from `i` to `end` holds only well-formed references and no ']]>'. */
function checkText(s: string, i: number, end: number): boolean {
  for (let k = i; k < end; k++) {
    const c = s.charCodeAt(k)
    if (c === 38 /* & */) {
      k = referenceEnd(s, k)
      if (k < 0 || k >= end) return false
    } else if (c === 93 /* ] */ && s.charCodeAt(k + 1) === 93 && s.charCodeAt(k + 2) === 62) return false
  }
  return true
}

/** The index of the ';' ending a predefined entity or character reference at `amp`; -1 otherwise. */
function referenceEnd(s: string, amp: number): number {
  const semi = s.indexOf(';', amp + 1)
  if (semi < 0 || semi - amp > 10) return -1
  const ref = s.slice(amp + 1, semi)
  if (ref === 'lt' || ref === 'gt' || ref === 'amp' || ref === 'quot' || ref === 'apos') return semi
  let code = NaN
  if (/^#[0-9]+$/.test(ref)) code = Number(ref.slice(1))
  else if (/^#x[0-9a-fA-F]+$/.test(ref)) code = Number.parseInt(ref.slice(2), 16)
  const ok =
    code === 9 || code === 10 || code === 13 || (code >= 0x20 && code <= 0xd7ff) || (code >= 0xe000 && code <= 0xfffd) || (code >= 0x10000 && code <= 0x10ffff)
  return ok ? semi : -1
}

function skipSpace(s: string, i: number): number {
  for (;;) {
    const c = s.charCodeAt(i)
    if (c === 32 || c === 10 || c === 9 || c === 13) i++
    else return i
  }
}

const DECLARED = `<div xmlns="${XHTML_NS}"`

/**
 * Declares the XHTML namespace on every narrative div of a valid resource that lacks it, in place, so
 * it is stored as HAPI FHIR stores it: the resource's own, its contained resources', and those of
 * Bundle entries and Parameters.
 */
export function normalizeNarratives(resource: any, depth = 0): void {
  if (resource === null || typeof resource !== 'object' || depth > 100) return
  const text = resource.text
  if (text && typeof text.div === 'string' && !text.div.startsWith(DECLARED)) {
    try {
      text.div = narrativeXhtml(text.div, '')
    } catch {
      // Left as it is: validation reports it.
    }
  }
  if (Array.isArray(resource.contained)) for (const c of resource.contained) normalizeNarratives(c, depth + 1)
  if (resource.resourceType === 'Bundle' && Array.isArray(resource.entry)) for (const e of resource.entry) normalizeNarratives(e?.resource, depth + 1)
  if (resource.resourceType === 'Parameters' && Array.isArray(resource.parameter)) normalizeParameters(resource.parameter, depth + 1)
}

function normalizeParameters(parameters: any[], depth: number): void {
  for (const p of parameters) {
    normalizeNarratives(p?.resource, depth)
    if (Array.isArray(p?.part)) normalizeParameters(p.part, depth + 1)
  }
}
