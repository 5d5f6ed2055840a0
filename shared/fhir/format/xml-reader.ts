// A small, strict, namespace-aware XML reader: a document to a tree of elements that keep their source
// offsets, so the FHIR reader can take the XHTML narrative verbatim. No DTDs, so no entity expansion.
// https://www.w3.org/TR/xml/ and https://www.w3.org/TR/xml-names/
import { AppError } from '../../errors'

export const XHTML_NS = 'http://www.w3.org/1999/xhtml'
export const XML_NS = 'http://www.w3.org/XML/1998/namespace'
export const XMLNS_NS = 'http://www.w3.org/2000/xmlns/'

export interface XmlAttribute {
  /** Namespace URI; '' for an unprefixed attribute (attributes do not take the default namespace). */
  ns: string
  name: string
  qname: string
  value: string
}

export interface XmlElement {
  ns: string
  /** Local name. */
  name: string
  qname: string
  attrs: XmlAttribute[]
  /** Child elements and decoded text. */
  children: (XmlElement | string)[]
  /** Offsets in the source: the `<` of the start tag, after the `>` of the end tag. */
  start: number
  end: number
  /** The source the offsets refer to. */
  source: string
}

export interface ReadXmlOptions {
  maxDepth: number
  /** Whitespace-only text inside elements of this namespace is dropped (data, not mixed content). */
  dropWhitespaceIn?: string
}

interface Scope {
  default: string
  prefixes: Map<string, string> | null
  parent: Scope | null
}

const ROOT_SCOPE: Scope = { default: '', prefixes: new Map([['xml', XML_NS]]), parent: null }

/** Parses a whole document and returns its root element; throws AppError('invalid') naming the problem. */
export function readXml(text: string, opts: ReadXmlOptions): XmlElement {
  const len = text.length
  const fail = (message: string, at: number): never => {
    const before = text.slice(0, at)
    const line = before.split('\n').length
    const col = at - before.lastIndexOf('\n')
    throw new AppError('invalid', `XML error at line ${line}, column ${col}: ${message}`, {
      issues: [{ severity: 'error', code: 'structure', diagnostics: `XML error at line ${line}, column ${col}: ${message}` }],
    })
  }

  const stack: XmlElement[] = []
  const scopes: Scope[] = []
  let scope = ROOT_SCOPE
  let root: XmlElement | undefined
  let pos = text.charCodeAt(0) === 0xfeff ? 1 : 0

  while (pos < len) {
    const lt = text.indexOf('<', pos)
    const textEnd = lt < 0 ? len : lt
    if (textEnd > pos) {
      const parent = stack[stack.length - 1]
      if (!parent) {
        if (!isBlank(text, pos, textEnd)) fail(root ? 'text after the root element' : 'text before the root element', pos)
      } else if (parent.ns !== opts.dropWhitespaceIn || !isBlank(text, pos, textEnd)) {
        const raw = normalizeLineEnds(text.slice(pos, textEnd))
        if (raw.includes(']]>')) fail(`']]>' is not allowed in text`, pos)
        parent.children.push(raw.includes('&') ? decode(raw, pos, fail) : raw)
      }
    }
    if (lt < 0) break
    const c = text.charCodeAt(lt + 1)

    if (c === 63 /* ? */) {
      // Processing instruction, including the XML declaration: nothing in FHIR uses them.
      const end = text.indexOf('?>', lt + 2)
      if (end < 0) fail('unterminated processing instruction', lt)
      pos = end + 2
    } else if (c === 33 /* ! */) {
      if (text.startsWith('<!--', lt)) {
        const end = text.indexOf('--', lt + 4)
        if (end < 0) fail('unterminated comment', lt)
        if (text.charCodeAt(end + 2) !== 62) fail(`'--' is not allowed inside a comment`, end)
        pos = end + 3
      } else if (text.startsWith('<![CDATA[', lt)) {
        const parent = stack[stack.length - 1]
        if (!parent) fail('CDATA section outside the root element', lt)
        const end = text.indexOf(']]>', lt + 9)
        if (end < 0) fail('unterminated CDATA section', lt)
        if (parent.ns !== opts.dropWhitespaceIn || !isBlank(text, lt + 9, end)) {
          parent.children.push(normalizeLineEnds(text.slice(lt + 9, end)))
        }
        pos = end + 3
      } else if (text.startsWith('<!DOCTYPE', lt) || text.startsWith('<!ENTITY', lt)) {
        // https://hl7.org/fhir/R4/security.html#xml: DTDs (and with them entity expansion) are refused.
        fail('DOCTYPE and ENTITY declarations are not allowed', lt)
      } else {
        fail('unexpected markup declaration', lt)
      }
    } else if (c === 47 /* / */) {
      const gt = text.indexOf('>', lt + 2)
      if (gt < 0) fail('unterminated end tag', lt)
      let nameEnd = gt
      while (nameEnd > lt + 2 && isSpace(text.charCodeAt(nameEnd - 1))) nameEnd--
      const qname = text.slice(lt + 2, nameEnd)
      const open = stack.pop()
      if (!open) fail(`unexpected end tag </${qname}>`, lt)
      else if (open.qname !== qname) fail(`end tag </${qname}> does not match <${open.qname}>`, lt)
      else {
        open.end = gt + 1
        scope = scopes.pop()!
      }
      pos = gt + 1
    } else {
      if (root && stack.length === 0) fail('more than one root element', lt)
      if (stack.length >= opts.maxDepth) fail(`elements nested deeper than ${opts.maxDepth}`, lt)
      // Start tag: name, then attributes until '>' or '/>'.
      let p = scanName(text, lt + 1, len)
      if (p === lt + 1) fail('invalid element name', lt + 1)
      const qname = text.slice(lt + 1, p)
      const attrs: XmlAttribute[] = []
      let names: Set<string> | undefined // for the duplicate check once there are many attributes
      let prefixed = qname.includes(':')
      let declares = false
      let selfClosing = false
      for (;;) {
        const before = p
        while (p < len && isSpace(text.charCodeAt(p))) p++
        if (p >= len) fail(`unterminated start tag <${qname}>`, lt)
        const ch = text.charCodeAt(p)
        if (ch === 62 /* > */) {
          p++
          break
        }
        if (ch === 47 /* / */) {
          if (text.charCodeAt(p + 1) !== 62) fail(`expected '>' after '/' in <${qname}>`, p)
          selfClosing = true
          p += 2
          break
        }
        if (p === before) fail(`expected whitespace or '>' in <${qname}>`, p)
        const nameStart = p
        p = scanName(text, p, len)
        if (p === nameStart) fail(`invalid attribute name in <${qname}>`, p)
        const aname = text.slice(nameStart, p)
        while (p < len && isSpace(text.charCodeAt(p))) p++
        if (text.charCodeAt(p) !== 61 /* = */) fail(`expected '=' after attribute ${aname}`, p)
        p++
        while (p < len && isSpace(text.charCodeAt(p))) p++
        const quote = text.charCodeAt(p)
        if (quote !== 34 && quote !== 39) fail(`expected a quoted value for attribute ${aname}`, p)
        const close = text.indexOf(quote === 34 ? '"' : "'", p + 1)
        if (close < 0) fail(`unterminated value of attribute ${aname}`, p)
        let refs = false
        let spaces = false
        for (let i = p + 1; i < close; i++) {
          const v = text.charCodeAt(i)
          if (v === 38 /* & */) refs = true
          else if (v === 60 /* < */) fail(`'<' is not allowed in the value of attribute ${aname}`, i)
          else if (v === 9 || v === 10 || v === 13) spaces = true
        }
        let value = text.slice(p + 1, close)
        // https://www.w3.org/TR/xml/#AVNormalize: literal whitespace becomes a space, then references.
        if (spaces) value = value.replace(/\r\n?|[\t\n]/g, ' ')
        if (refs) value = decode(value, p + 1, fail)
        if (attrs.length >= 8) {
          names ??= new Set(attrs.map((a) => a.qname))
          if (names.has(aname)) fail(`duplicate attribute ${aname}`, nameStart)
          names.add(aname)
        } else for (const a of attrs) if (a.qname === aname) fail(`duplicate attribute ${aname}`, nameStart)
        if (aname.includes(':')) prefixed = true
        else if (aname === 'xmlns') declares = true
        attrs.push({ ns: '', name: aname, qname: aname, value })
        p = close + 1
      }

      // Namespace declarations first, then resolve the element and attribute names.
      let elScope = scope
      if (declares || prefixed) {
        for (const a of attrs) {
          if (a.qname === 'xmlns') {
            if (elScope === scope) elScope = { default: scope.default, prefixes: null, parent: scope }
            elScope.default = a.value
            a.ns = XMLNS_NS
          } else if (a.qname.startsWith('xmlns:')) {
            if (elScope === scope) elScope = { default: scope.default, prefixes: null, parent: scope }
            if (!a.value) fail(`empty namespace for prefix ${a.qname.slice(6)}`, lt)
            ;(elScope.prefixes ??= new Map()).set(a.qname.slice(6), a.value)
          }
        }
        for (const a of attrs) {
          const ac = a.qname.indexOf(':')
          if (ac < 0) continue
          const prefix = a.qname.slice(0, ac)
          const ans = prefix === 'xmlns' ? XMLNS_NS : resolvePrefix(elScope, prefix)
          if (ans === undefined) fail(`undeclared namespace prefix in attribute ${a.qname}`, lt)
          a.ns = ans!
          a.name = a.qname.slice(ac + 1)
        }
      }
      const colon = qname.indexOf(':')
      const ns = colon < 0 ? elScope.default : resolvePrefix(elScope, qname.slice(0, colon))
      if (ns === undefined) fail(`undeclared namespace prefix in <${qname}>`, lt)
      const el: XmlElement = {
        ns: ns!,
        name: colon < 0 ? qname : qname.slice(colon + 1),
        qname,
        attrs,
        children: [],
        start: lt,
        end: p,
        source: text,
      }
      const parent = stack[stack.length - 1]
      if (parent) parent.children.push(el)
      else root = el
      if (!selfClosing) {
        stack.push(el)
        scopes.push(scope)
        scope = elScope
      }
      pos = p
    }
  }
  if (stack.length) fail(`element <${stack[stack.length - 1].qname}> is not closed`, len)
  if (!root) fail('no root element', 0)
  return root!
}

// https://www.w3.org/TR/xml/#sec-line-ends, applied to text and attribute values only, so that
// `source.slice(start, end)` stays the document's own bytes.
function normalizeLineEnds(s: string): string {
  return s.includes('\r') ? s.replace(/\r\n?/g, '\n') : s
}

function resolvePrefix(scope: Scope | null, prefix: string): string | undefined {
  for (let s = scope; s; s = s.parent) {
    const ns = s.prefixes?.get(prefix)
    if (ns !== undefined) return ns
  }
  return undefined
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 9 || c === 13
}

function isBlank(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!isSpace(text.charCodeAt(i))) return false
  return true
}

// https://www.w3.org/TR/xml/#NT-Name: exact for ASCII; any non-ASCII character is let through
// (the full Unicode table costs more than it protects, names are checked against FHIR anyway).
const NAME_START = new Uint8Array(128)
const NAME_CHAR = new Uint8Array(128)
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c)
  NAME_START[c] = /[A-Za-z_:]/.test(ch) ? 1 : 0
  NAME_CHAR[c] = /[A-Za-z0-9_:.\-]/.test(ch) ? 1 : 0
}

/** The end of the name starting at `p`, or `p` when there is none. */
function scanName(text: string, p: number, len: number): number {
  const c = text.charCodeAt(p)
  if (!(c >= 128 || NAME_START[c])) return p
  let i = p + 1
  while (i < len) {
    const d = text.charCodeAt(i)
    if (d < 128 && !NAME_CHAR[d]) break
    i++
  }
  return i
}

const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }

/** Replaces the five predefined entities and character references; any other entity is an error. */
function decode(s: string, at: number, fail: (m: string, at: number) => never): string {
  return s.replace(/&([^;&]*);?/g, (m, ref: string, offset: number) => {
    if (!m.endsWith(';')) fail(`'&' must start an entity or character reference`, at + offset)
    const named = PREDEFINED[ref]
    if (named) return named
    let code = NaN
    if (/^#[0-9]+$/.test(ref)) code = Number(ref.slice(1))
    else if (/^#x[0-9a-fA-F]+$/.test(ref)) code = Number.parseInt(ref.slice(2), 16)
    else fail(`undefined entity &${ref};`, at + offset)
    // https://www.w3.org/TR/xml/#NT-Char
    const ok =
      code === 9 || code === 10 || code === 13 || (code >= 0x20 && code <= 0xd7ff) || (code >= 0xe000 && code <= 0xfffd) || (code >= 0x10000 && code <= 0x10ffff)
    if (!ok) fail(`character reference &${ref}; is not a legal XML character`, at + offset)
    return String.fromCodePoint(code)
  })
}
