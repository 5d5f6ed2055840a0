// FHIR XML -> FHIR JSON, driven by the element tables: arrays from cardinality, primitives split into
// `name` and `_name`, JSON types for boolean and numbers, resources unwrapped, XHTML narrative verbatim.
// Reads the ordered node tree of fast-xml-parser (see xml-reader.ts); the narrative div is a stop node,
// so its XHTML arrives as the raw source text. https://hl7.org/fhir/R4/xml.html and https://hl7.org/fhir/R4/json.html
import { invalid } from '../../errors'
import { type ElementDef, type TypeDef, getTypeDef } from '../definitions/elements'
import {
  ATTRS,
  CDATA,
  enterScope,
  isNamespaceDeclaration,
  nameOf,
  parseXmlNodes,
  prefixNamespace,
  readXml,
  refuseDtd,
  ROOT_SCOPE,
  type Scope,
  scopeDeclarations,
  sourceRange,
  startTag,
  TEXT,
  textValue,
  attributeValue,
  XHTML_NS,
  XML_NS,
  XMLNS_NS,
  type XmlAttrs,
  type XmlElement,
  type XmlNode,
  xmlError,
} from './xml-reader'

const FHIR_NS = 'http://hl7.org/fhir'
const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance'
/** Narrative XHTML is read as a document of its own only when it must be rewritten. */
const XHTML_MAX_DEPTH = 1000

export function parseFhirXml(text: string, opts: { maxDepth?: number } = {}): any {
  refuseDtd(text)
  const root = parseXmlNodes(text, { maxDepth: opts.maxDepth ?? 100, stopNodes: narrativeStopNodes(text) })
  return readResource(root, '', ROOT_SCOPE, text)
}

// https://hl7.org/fhir/R4/narrative.html#xhtml: every div (the only one FHIR has is Narrative.div) is
// kept as raw text; a prefixed one (<h:div>) is a stop node only under its own prefix.
const DIV_STOP_NODES = ['*.div']

function narrativeStopNodes(text: string): string[] {
  if (!text.includes(':div')) return DIV_STOP_NODES
  const prefixes = new Set<string>()
  for (const m of text.matchAll(/<([^\s<>/!?:]+):div[\s/>]/g)) prefixes.add(m[1])
  return prefixes.size ? [...DIV_STOP_NODES, ...[...prefixes].map((p) => `*.${p}:div`)] : DIV_STOP_NODES
}

/** The namespace and local name of an element `qname` in `scope`. */
function resolveElement(qname: string, scope: Scope): [ns: string, name: string] {
  const colon = qname.indexOf(':')
  return colon < 0 ? [scope.default, qname] : [prefixNamespace(qname, colon, scope), qname.slice(colon + 1)]
}

function readResource(node: XmlNode, path: string, parentScope: Scope, source: string): any {
  const qname = nameOf(node)
  const attrs: XmlAttrs | undefined = node[ATTRS]
  const scope = attrs ? enterScope(attrs, parentScope) : parentScope
  const [ns, name] = resolveElement(qname, scope)
  const where = path || name
  if (ns !== FHIR_NS) throw invalid(`Element <${qname}> is not in the FHIR namespace ${FHIR_NS}`, where)
  const td = getTypeDef(name)
  if (!td || td.kind !== 'resource' || td.abstract) throw invalid(`Unknown resource type '${name}'`, where)
  const out: any = { resourceType: name }
  if (attrs) readAttributes(attrs, td, out, where, scope)
  readChildren(node[qname], td, out, where, scope, source)
  return out
}

/** What the reader needs to know about one child element name of a type, worked out once. */
interface Child {
  /** The JSON property name; the table's own string, so property access needs no re-interning. */
  name: string
  element: ElementDef
  type: string
  typeDef: TypeDef
  kind: 'xhtml' | 'primitive' | 'resource' | 'complex'
  /** `_name`, the JSON companion of a primitive. */
  extName: string
}

const childTables = new WeakMap<TypeDef, Map<string, Child>>()

function childrenOf(td: TypeDef): Map<string, Child> {
  let table = childTables.get(td)
  if (table) return table
  table = new Map()
  for (const [name, { element, type }] of td.properties) {
    if (element.representation?.includes('xmlAttr')) continue
    const typeDef = getTypeDef(type)
    if (!typeDef) continue
    const kind =
      type === 'xhtml' ? 'xhtml' : typeDef.kind === 'primitive-type' ? 'primitive' : typeDef.kind === 'resource' ? 'resource' : 'complex'
    table.set(name, { name, element, type, typeDef, kind, extName: '_' + name })
  }
  childTables.set(td, table)
  return table
}

/** The attributes of an element of a complex type (Element.id, Extension.url) into `out`. */
function readAttributes(attrs: XmlAttrs, td: TypeDef, out: any, path: string, scope: Scope): void {
  for (const qname in attrs) {
    const colon = qname.indexOf(':')
    if (colon >= 0 || qname === 'xmlns') {
      // Namespace declarations, xml:space / xml:lang and xsi:schemaLocation carry no FHIR content.
      const ns = colon < 0 ? XMLNS_NS : prefixNamespace(qname, colon, scope)
      if (ns === XMLNS_NS || ns === XML_NS || ns === XSI_NS) continue
      throw invalid(`Unknown attribute '${qname}'`, `${path}.@${qname}`)
    }
    const prop = td.properties.get(qname)
    if (!prop || !prop.element.representation?.includes('xmlAttr')) {
      throw invalid(`Unknown attribute '${qname}'`, `${path}.@${qname}`)
    }
    out[qname] = attributeValue(attrs[qname], qname)
  }
}

/** Reads the child nodes of an element of a complex type into `out`. */
function readChildren(nodes: XmlNode[], td: TypeDef, out: any, path: string, scope: Scope, source: string): void {
  const table = childrenOf(td)
  let primitiveArrays: Child[] | undefined
  let choices: [ElementDef, string][] | undefined
  for (const node of nodes) {
    const qname = nameOf(node)
    if (qname === TEXT || qname === CDATA) {
      const text: string = qname === TEXT ? node[TEXT] : (node[CDATA][0]?.[TEXT] ?? '')
      if (!isBlank(text)) throw invalid(`Text is not allowed here: '${text.trim().slice(0, 40)}'`, path)
      continue
    }
    const attrs: XmlAttrs | undefined = node[ATTRS]
    const inner = attrs ? enterScope(attrs, scope) : scope
    const colon = qname.indexOf(':')
    const local = colon < 0 ? qname : qname.slice(colon + 1)
    const child = table.get(local)
    if (!child) throw invalid(`Unknown element '${local}'`, `${path}.${local}`)
    const { name, element, kind } = child
    // The narrative div is the one element in another namespace (XHTML), checked by readXhtml.
    if (kind !== 'xhtml' && (colon < 0 ? inner.default : prefixNamespace(qname, colon, inner)) !== FHIR_NS) {
      throw invalid(`Element <${qname}> is not in the FHIR namespace ${FHIR_NS}`, `${path}.${name}`)
    }
    if (element.choice) {
      const seen = (choices ??= []).find((c) => c[0] === element)
      if (!seen) choices.push([element, name])
      else if (seen[1] !== name) throw invalid(`Only one of ${seen[1]} and ${name} is allowed`, `${path}.${name}`)
    }
    const existing = out[name]
    if (!element.array && (existing !== undefined || (kind === 'primitive' && out[child.extName] !== undefined))) {
      throw invalid(`Element '${name}' repeats but may occur only once`, `${path}.${name}`)
    }
    // Paths are only built when needed: for errors and for complex children.
    const index = element.array ? (existing?.length ?? 0) : -1
    const children: XmlNode[] = node[qname]

    if (kind === 'primitive') {
      readPrimitive(children, attrs, child, out, path, index, inner, source)
      if (index === 0) (primitiveArrays ??= []).push(child)
    } else if (kind === 'xhtml') {
      out[name] = readXhtml(node, qname, attrs, inner, pathOf(path, name, index), source)
    } else {
      let value: any
      const at = pathOf(path, name, index)
      if (kind === 'resource') {
        value = readContainedResource(children, qname, attrs, child.type, at, inner, source)
      } else {
        value = {}
        if (attrs) readAttributes(attrs, child.typeDef, value, at, inner)
        readChildren(children, child.typeDef, value, at, inner, source)
      }
      if (element.array) (existing ?? (out[name] = [])).push(value)
      else out[name] = value
    }
  }

  if (primitiveArrays) {
    for (const { name, extName } of primitiveArrays) {
      const values: any[] = out[name]
      const exts: any[] | undefined = out[extName]
      if (exts) while (exts.length < values.length) exts.push(null)
      if (values.every((v) => v === null)) delete out[name]
    }
  }
}

function pathOf(parent: string, name: string, index: number): string {
  return index < 0 ? `${parent}.${name}` : `${parent}.${name}[${index}]`
}

function isBlank(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c !== 32 && c !== 10 && c !== 9 && c !== 13) return false
  }
  return true
}

/**
 * A primitive: the `value` attribute, an `id` attribute and `extension` children, into `name` and
 * `_name` of `out`. https://hl7.org/fhir/R4/json.html#primitive: repeating primitives are parallel
 * arrays, with null where one side has nothing.
 */
function readPrimitive(nodes: XmlNode[], attrs: XmlAttrs | undefined, child: Child, out: any, parent: string, index: number, scope: Scope, source: string): void {
  const { name, extName, typeDef } = child
  let text: string | undefined
  let ext: any
  for (const qname in attrs) {
    if (qname === 'value') text = attributeValue(attrs[qname], qname)
    else if (qname === 'id') (ext ??= {}).id = attributeValue(attrs[qname], qname)
    else {
      const colon = qname.indexOf(':')
      if (colon >= 0 || qname === 'xmlns') {
        const ns = colon < 0 ? XMLNS_NS : prefixNamespace(qname, colon, scope)
        if (ns === XMLNS_NS || ns === XML_NS) continue
      }
      throw invalid(`Unknown attribute '${qname}'`, `${pathOf(parent, name, index)}.@${qname}`)
    }
  }
  if (nodes.length) {
    // Whitespace between elements yields nothing, so `_name` only appears for real content.
    const target = ext ?? {}
    readChildren(nodes, typeDef, target, pathOf(parent, name, index), scope, source)
    if (target !== ext) for (const _ in target) ext = target
  }
  if (text === undefined && !ext) throw invalid(`Element has neither a value nor extensions`, pathOf(parent, name, index))
  const value = text === undefined ? null : primitiveValue(text, typeDef)
  if (value === undefined) throw invalid(`Invalid ${typeDef.name} '${text}'`, pathOf(parent, name, index))
  if (index < 0) {
    if (value !== null) out[name] = value
    if (ext) out[extName] = ext
    return
  }
  const values: any[] = index === 0 ? (out[name] = []) : out[name]
  values.push(value)
  if (ext) {
    const exts: any[] = out[extName] ?? (out[extName] = [])
    while (exts.length < index) exts.push(null)
    exts.push(ext)
  }
}

// https://hl7.org/fhir/R4/json.html#primitive: boolean and the numeric types are JSON booleans and
// numbers; everything else stays a string. Undefined when the text is not a valid value.
function primitiveValue(text: string, td: TypeDef): string | number | boolean | undefined {
  switch (td.name) {
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : undefined
    case 'integer':
    case 'unsignedInt':
    case 'positiveInt':
    case 'decimal': {
      if (!td.regex?.test(text)) return undefined
      const n = Number(text)
      return Number.isFinite(n) ? n : undefined
    }
    default:
      return text
  }
}

// https://hl7.org/fhir/R4/xml.html#resource: <contained><Patient>...</Patient></contained>.
function readContainedResource(nodes: XmlNode[], qname: string, attrs: XmlAttrs | undefined, type: string, path: string, scope: Scope, source: string): any {
  const name = qname.slice(qname.indexOf(':') + 1)
  for (const a in attrs) if (!a.includes(':') && a !== 'xmlns') throw invalid(`Attributes are not allowed on <${name}>`, path)
  let inner: XmlNode | undefined
  for (const node of nodes) {
    const key = nameOf(node)
    const blank = key === TEXT ? isBlank(node[TEXT]) : key === CDATA ? isBlank(node[CDATA][0]?.[TEXT] ?? '') : false
    if (blank) continue
    if (inner || key === TEXT || key === CDATA) throw invalid(`<${name}> must contain exactly one resource`, path)
    inner = node
  }
  if (!inner) throw invalid(`<${name}> must contain exactly one resource`, path)
  const resource = readResource(inner, path, scope, source)
  if (type !== 'Resource' && resource.resourceType !== type) {
    throw invalid(`Expected a ${type}, found ${resource.resourceType}`, path)
  }
  return resource
}

// https://hl7.org/fhir/R4/json.html#xhtml: the div is a string of XHTML with its namespace declared.
// It is cut from the source as is (a stop node, so the library has not parsed inside it), unless it
// relies on prefixes declared outside it: then it is read as XML and rewritten without them.
function readXhtml(node: XmlNode, qname: string, attrs: XmlAttrs | undefined, scope: Scope, path: string, source: string): string {
  const [ns, name] = resolveElement(qname, scope)
  if (ns !== XHTML_NS || name !== 'div') throw invalid(`Narrative must be an XHTML <div>`, path)
  const content: XmlNode[] = node[qname]
  if (content.length !== 1 || typeof content[0][TEXT] !== 'string') throw xmlError(`narrative <${qname}> was not kept as raw XHTML`)
  const raw: string = content[0][TEXT]
  // XMLValidator has checked the markup inside; the references are left, in attributes and text.
  for (const a in attrs) attributeValue(attrs[a], a)
  textValue(raw)
  if (qname === 'div' && attrs?.xmlns !== undefined && !mayUsePrefixes(raw)) {
    const [start, end] = sourceRange(node)
    return source.slice(start, end)
  }
  const declared = { ...scopeDeclarations(scope), ...attrs }
  const div = readXml(startTag(qname, declared) + raw + `</${qname}>`, { maxDepth: XHTML_MAX_DEPTH })
  return writeXhtml(div, true, path)
}

/** Whether raw XHTML may have a prefixed element or attribute (other than xml:); false positives are harmless. */
function mayUsePrefixes(raw: string): boolean {
  return raw.includes(':') && /<[^\s<>/!?]*:|\s(?!xml:|xmlns)[^\s=<>"'/]+:[^\s=<>"'/]*\s*=\s*["']/.test(raw)
}

/** Re-serializes XHTML without prefixes, declaring the namespace on the div. */
function writeXhtml(el: XmlElement, root: boolean, path: string): string {
  if (el.ns !== XHTML_NS) throw invalid(`Narrative may contain only XHTML, found <${el.qname}>`, path)
  let s = '<' + el.name + (root ? ` xmlns="${XHTML_NS}"` : '')
  for (const a of el.attrs) {
    if (a.ns === XMLNS_NS) continue
    const name = a.ns === XML_NS ? 'xml:' + a.name : a.ns === '' ? a.name : undefined
    if (name) s += ' ' + name + '="' + escapeXml(a.value).replace(/"/g, '&quot;') + '"'
  }
  if (!el.children.length) return s + '/>'
  s += '>'
  for (const c of el.children) s += typeof c === 'string' ? escapeXml(c) : writeXhtml(c, false, path)
  return s + '</' + el.name + '>'
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}
