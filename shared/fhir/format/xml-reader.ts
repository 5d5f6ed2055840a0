// XML reading on fast-xml-parser: XMLValidator checks well-formedness (with line and column), XMLParser
// builds the tree in document order; namespaces (xml-names.ts) and references (xml-text.ts) are left
// to its caller. DTDs are refused before either runs, so nothing expands.
// https://www.w3.org/TR/xml/ and https://www.w3.org/TR/xml-names/
import { XMLParser, XMLValidator, type X2jOptions } from 'fast-xml-parser'
import { AppError } from '../../errors'
import { xmlError } from './xml-error'
import { enterScope, prefixNamespace, ROOT_SCOPE, type Scope, XMLNS_NS } from './xml-names'
import { attributeValue, textValue } from './xml-text'

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

export interface ReadXmlOptions {
  /**
   * Elements with content may nest this deep (the root is 1); XMLParser's `maxNestedTags` enforces it
   * while reading, so an empty element may sit one level below.
   */
  maxDepth: number
  /** Elements left unparsed, their content kept as raw text: `*.div`. */
  stopNodes?: string[]
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
    // Document order: XHTML mixed content needs it (FHIR only within one element name), and the
    // ordered tree is the library's faster output: no second pass to build objects.
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '',
    // Raw text and attribute values. The library would decode only the five named entities (numeric
    // references need `htmlEntities`, which also expands &nbsp; and the rest of HTML), and attribute
    // values need whitespace normalized before references are decoded: xml-text.ts does both.
    processEntities: false,
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: false,
    cdataPropName: CDATA, // kept apart from text, whose references are still to decode
    ignoreDeclaration: true,
    ignorePiTags: true,
    stopNodes,
    maxNestedTags: maxDepth - 1, // it counts the open ancestors of an element being opened
    captureMetaData: true, // source offsets: the root's end, and the narrative cut from the source
    jPath: false, // no path strings for callbacks that are not used
  }
  parser = new XMLParser(options)
  if (parsers.size < 16) parsers.set(key, parser) // sets vary only with maxDepth and rare prefixed divs
  return parser
}

const META = XMLParser.getMetaDataSymbol() as unknown as symbol

/** Where an element node starts (its `<`) and ends (after its last `>`) in the source. */
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
  // The parser drops declarations and PIs; what XMLValidator lets through outside the root (CDATA,
  // anything after a root written as <x/>) is refused here.
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

/** Whether the source from `from` on holds only whitespace, comments and processing instructions. */
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

/** A node's qualified name (its first key), or TEXT or CDATA. */
export function nameOf(node: XmlNode): string {
  for (const key in node) return key
  return ''
}

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
  const children: (XmlElement | string)[] = []
  for (const child of node[qname] as XmlNode[]) {
    const name = nameOf(child)
    const text = name === TEXT ? textValue(child[TEXT]) : name === CDATA ? (child[CDATA][0]?.[TEXT] ?? '') : undefined
    if (text === undefined) children.push(toElement(child, scope))
    else if (typeof children[children.length - 1] === 'string') children[children.length - 1] += text
    else if (text) children.push(text)
  }
  const colon = qname.indexOf(':')
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
