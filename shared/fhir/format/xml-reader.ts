// XML reading on fast-xml-parser: XMLValidator for well-formedness (with line and column), XMLParser
// for the tree in document order, and here what the library leaves to its caller: namespaces, strict
// entity and character references, attribute-value normalization. DTDs are refused, so nothing expands.
// https://www.w3.org/TR/xml/ and https://www.w3.org/TR/xml-names/
import { XMLParser, XMLValidator, type X2jOptions } from 'fast-xml-parser'
import { AppError } from '../../errors'

export const XHTML_NS = 'http://www.w3.org/1999/xhtml'
export const XML_NS = 'http://www.w3.org/XML/1998/namespace'
export const XMLNS_NS = 'http://www.w3.org/2000/xmlns/'

/**
 * One node of XMLParser's `preserveOrder` output: an element is `{ [qname]: children, ':@'?: attributes }`
 * (the name is its first key, attribute values are the raw source text), text is `{ '#text': raw }`
 * and a CDATA section `{ '#cdata': [{ '#text': content }] }`.
 */
export type XmlNode = Record<string, any>
export type XmlAttrs = Record<string, string>
export const ATTRS = ':@'
export const TEXT = '#text'
export const CDATA = '#cdata'

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
}

export interface ReadXmlOptions {
  /**
   * Elements with content may nest this deep (the root is 1); XMLParser's `maxNestedTags` enforces it
   * while reading, so an empty element may sit one level below.
   */
  maxDepth: number
  /** Elements left unparsed, their content kept as raw text, e.g. `*.div`. */
  stopNodes?: string[]
}

export interface Scope {
  default: string
  prefixes: Map<string, string> | null
  parent: Scope | null
}

export const ROOT_SCOPE: Scope = { default: '', prefixes: new Map([['xml', XML_NS]]), parent: null }

/** An AppError('invalid') for input that is not well-formed XML; line and column when known. */
export function xmlError(message: string, line?: number, col?: number): AppError {
  const at = line ? (col ? ` at line ${line}, column ${col}` : ` at line ${line}`) : ''
  const text = `XML error${at}: ${message}`
  return new AppError('invalid', text, { issues: [{ severity: 'error', code: 'structure', diagnostics: text }] })
}

// https://hl7.org/fhir/R4/security.html#xml: refuse DTDs before reading a single element, so
// entity-expansion attacks (billion laughs, external entities) cost one scan.
export function refuseDtd(text: string): void {
  if (text.includes('<!DOCTYPE') || text.includes('<!ENTITY')) {
    const message = 'XML with a DOCTYPE or ENTITY declaration is not accepted'
    throw new AppError('invalid', message, { issues: [{ severity: 'error', code: 'security', diagnostics: message }] })
  }
}

const parsers = new Map<string, XMLParser>()

function parserFor(maxDepth: number, stopNodes: string[]): XMLParser {
  const key = `${maxDepth}|${stopNodes.join(' ')}`
  let parser = parsers.get(key)
  if (parser) return parser
  const options: X2jOptions = {
    // Document order: mixed content (XHTML) needs it, FHIR only within one element name; the ordered
    // tree is also the library's faster output (no second pass to build objects).
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '',
    // Raw text and attribute values: the library decodes only the five named entities (numeric
    // references need `htmlEntities`, which also expands &nbsp; and the rest), and attribute values
    // need whitespace normalized before references are decoded. Both are done by decode below.
    processEntities: false,
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: false,
    cdataPropName: CDATA,
    ignoreDeclaration: true,
    ignorePiTags: true,
    stopNodes,
    maxNestedTags: maxDepth - 1, // it counts the open ancestors of an element being opened
    captureMetaData: true, // source offsets, for the root's end and narrative cut from the source
    jPath: false, // no path strings built for callbacks that are not used
  }
  parser = new XMLParser(options)
  if (parsers.size < 16) parsers.set(key, parser) // stop-node sets vary only with rare prefixed divs
  return parser
}

const META = XMLParser.getMetaDataSymbol() as unknown as symbol

/** Where an element node starts and ends in the source (before line-end normalization). */
export function sourceRange(node: XmlNode): [start: number, end: number] {
  const meta = (node as any)[META] as { startIndex?: number; endIndex?: number } | undefined
  return [meta?.startIndex ?? -1, meta?.endIndex ?? -1]
}

/** Checks and parses a whole document; returns the root element node. */
export function parseXmlNodes(text: string, opts: ReadXmlOptions): XmlNode {
  refuseDtd(text)
  const valid = XMLValidator.validate(text)
  if (valid !== true) throw xmlError(valid.err.msg, valid.err.line, valid.err.col)
  let nodes: XmlNode[]
  try {
    nodes = parserFor(opts.maxDepth, opts.stopNodes ?? []).parse(text)
  } catch (err) {
    const message = (err as Error).message
    throw xmlError(message.startsWith('Maximum nested tags') ? `elements nested deeper than ${opts.maxDepth}` : message)
  }
  // The parser drops declarations and PIs; what XMLValidator lets through outside the root (CDATA
  // anywhere, anything after a root written as <x/>) is refused here.
  let root: XmlNode | undefined
  for (const node of nodes) {
    const name = nameOf(node)
    if (name === TEXT || name === CDATA) throw xmlError('text outside the root element')
    if (root) throw xmlError('more than one root element')
    root = node
  }
  if (!root) throw xmlError('no root element')
  if (!isEpilogue(text, sourceRange(root)[1])) throw xmlError('text after the root element')
  return root
}

/** Whether the source from `from` holds only whitespace, comments and processing instructions. */
function isEpilogue(text: string, from: number): boolean {
  if (from < 0) return false
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 32 || c === 10 || c === 9 || c === 13) continue
    const close = text.startsWith('<!--', i) ? '-->' : text.startsWith('<?', i) ? '?>' : undefined
    const end = close ? text.indexOf(close, i + 2) : -1
    if (end < 0) return false
    i = end + close!.length - 1
  }
  return true
}

/** An element node's qualified name: its first key. */
export function nameOf(node: XmlNode): string {
  for (const key in node) return key
  return ''
}

/** The scope inside an element: the parent's, or a new one when the element declares namespaces. */
export function enterScope(attrs: XmlAttrs, scope: Scope): Scope {
  let inner = scope
  for (const key in attrs) {
    if (key.charCodeAt(0) !== 120 /* x */ || !key.startsWith('xmlns')) continue
    if (key === 'xmlns') {
      if (inner === scope) inner = { default: scope.default, prefixes: null, parent: scope }
      inner.default = attributeValue(attrs[key], key)
    } else if (key.charCodeAt(5) === 58 /* : */) {
      if (inner === scope) inner = { default: scope.default, prefixes: null, parent: scope }
      const ns = attributeValue(attrs[key], key)
      if (!ns) throw xmlError(`empty namespace for prefix ${key.slice(6)}`)
      ;(inner.prefixes ??= new Map()).set(key.slice(6), ns)
    }
  }
  return inner
}

export function isNamespaceDeclaration(qname: string): boolean {
  return qname === 'xmlns' || qname.startsWith('xmlns:')
}

export function resolvePrefix(scope: Scope | null, prefix: string): string | undefined {
  for (let s = scope; s; s = s.parent) {
    const ns = s.prefixes?.get(prefix)
    if (ns !== undefined) return ns
  }
  return undefined
}

/** The namespace of a prefixed attribute or element name; throws when the prefix is undeclared. */
export function prefixNamespace(qname: string, colon: number, scope: Scope): string {
  const prefix = qname.slice(0, colon)
  if (prefix === 'xmlns') return XMLNS_NS
  const ns = resolvePrefix(scope, prefix)
  if (ns === undefined) throw xmlError(`undeclared namespace prefix in ${qname}`)
  return ns
}

/** All namespace bindings in scope, as declarations to put on an element cut out of its document. */
export function scopeDeclarations(scope: Scope): XmlAttrs {
  const out: XmlAttrs = {}
  const seen = new Set<string>()
  for (let s: Scope | null = scope; s; s = s.parent) {
    for (const [prefix, ns] of s.prefixes ?? []) {
      if (prefix === 'xml' || seen.has(prefix)) continue
      seen.add(prefix)
      out['xmlns:' + prefix] = escapeAttribute(ns)
    }
  }
  if (scope.default) out.xmlns = escapeAttribute(scope.default)
  return out
}

/** A start tag from raw attribute values (as the parser keeps them), with double quotes. */
export function startTag(qname: string, attrs: XmlAttrs | undefined, close = '>'): string {
  let s = '<' + qname
  for (const key in attrs) {
    const raw = attrs[key]
    s += ' ' + key + '="' + (raw.includes('"') ? raw.replace(/"/g, '&quot;') : raw) + '"'
  }
  return s + close
}

function escapeAttribute(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;')
}

const ATTR_SPECIAL = /[&<\t\n\r]/

/**
 * An attribute's value from its raw text. https://www.w3.org/TR/xml/#AVNormalize: literal whitespace
 * becomes a space, then references are replaced. XMLValidator does not look inside values, so '<' is
 * refused here.
 */
export function attributeValue(raw: string, qname: string): string {
  if (!ATTR_SPECIAL.test(raw)) return raw
  if (raw.includes('<')) throw xmlError(`'<' is not allowed in the value of attribute ${qname}`)
  const value = raw.replace(/\r\n?|[\t\n]/g, ' ')
  return value.includes('&') ? decode(value) : value
}

/** Text from its raw source (the parser has already normalized line ends). */
export function textValue(raw: string): string {
  return raw.includes('&') ? decode(raw) : raw
}

const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }

/** Replaces the five predefined entities and character references; any other entity is an error. */
function decode(s: string): string {
  return s.replace(/&([^;&]*);?/g, (m, ref: string) => {
    if (!m.endsWith(';')) throw xmlError(`'&' must start an entity or character reference`)
    const named = PREDEFINED[ref]
    if (named) return named
    let code = NaN
    if (/^#[0-9]+$/.test(ref)) code = Number(ref.slice(1))
    else if (/^#x[0-9a-fA-F]+$/.test(ref)) code = Number.parseInt(ref.slice(2), 16)
    else throw xmlError(`undefined entity &${ref};`)
    // https://www.w3.org/TR/xml/#NT-Char
    const ok =
      code === 9 || code === 10 || code === 13 || (code >= 0x20 && code <= 0xd7ff) || (code >= 0xe000 && code <= 0xfffd) || (code >= 0x10000 && code <= 0x10ffff)
    if (!ok) throw xmlError(`character reference &${ref}; is not a legal XML character`)
    return String.fromCodePoint(code)
  })
}

/** Parses a whole document into a namespace-resolved tree; throws AppError('invalid') naming the problem. */
export function readXml(text: string, opts: ReadXmlOptions): XmlElement {
  return toElement(parseXmlNodes(text, opts), ROOT_SCOPE)
}

function toElement(node: XmlNode, parentScope: Scope): XmlElement {
  const qname = nameOf(node)
  const raw: XmlAttrs | undefined = node[ATTRS]
  const scope = raw ? enterScope(raw, parentScope) : parentScope
  const attrs: XmlAttribute[] = []
  for (const key in raw) {
    const value = attributeValue(raw[key], key)
    const colon = key.indexOf(':')
    if (colon < 0) attrs.push({ ns: key === 'xmlns' ? XMLNS_NS : '', name: key, qname: key, value })
    else attrs.push({ ns: prefixNamespace(key, colon, scope), name: key.slice(colon + 1), qname: key, value })
  }
  const colon = qname.indexOf(':')
  const children: (XmlElement | string)[] = []
  for (const child of node[qname] as XmlNode[]) {
    const name = nameOf(child)
    const text = name === TEXT ? textValue(child[TEXT]) : name === CDATA ? (child[CDATA][0]?.[TEXT] ?? '') : undefined
    if (text === undefined) children.push(toElement(child, scope))
    else if (typeof children[children.length - 1] === 'string') children[children.length - 1] += text
    else if (text) children.push(text)
  }
  const [start, end] = sourceRange(node)
  return {
    ns: colon < 0 ? scope.default : prefixNamespace(qname, colon, scope),
    name: colon < 0 ? qname : qname.slice(colon + 1),
    qname,
    attrs,
    children,
    start,
    end,
  }
}
