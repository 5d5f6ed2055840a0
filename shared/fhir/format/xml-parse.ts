// FHIR XML -> FHIR JSON, driven by the element tables: arrays from cardinality, primitives split into
// `name` and `_name`, JSON types for boolean and numbers, resources unwrapped, XHTML narrative verbatim.
// Walks fast-xml-parser's ordered tree (xml-reader.ts). https://hl7.org/fhir/R4/xml.html and https://hl7.org/fhir/R4/json.html
import { invalid } from '../../errors'
import { type ElementDef, type TypeDef, getTypeDef } from '../definitions/elements'
import { enterScope, prefixNamespace, resolveElement, ROOT_SCOPE, type Scope, XML_NS, XMLNS_NS } from './xml-names'
import { narrativeStopNodes, readNarrative } from './xml-narrative'
import { ATTRS, CDATA, nameOf, parseXmlNodes, TEXT, type XmlAttrs, type XmlNode } from './xml-reader'
import { attributeValue, textValue } from './xml-text'
import { decimalFromText } from './json'

const FHIR_NS = 'http://hl7.org/fhir'
const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance'

export function parseFhirXml(text: string, opts: { maxDepth?: number } = {}): any {
  const root = parseXmlNodes(text, { maxDepth: opts.maxDepth ?? 100, stopNodes: narrativeStopNodes(text) })
  return readResource(root, '', ROOT_SCOPE, text)
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
    const kind = type === 'xhtml' ? 'xhtml' : typeDef.kind === 'primitive-type' ? 'primitive' : typeDef.kind === 'resource' ? 'resource' : 'complex'
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
      if (isBlank(text)) continue
      if (qname === TEXT) textValue(text) // an XML error first, if it is one
      throw invalid(`Text is not allowed here: '${text.trim().slice(0, 40)}'`, path)
    }
    const attrs: XmlAttrs | undefined = node[ATTRS]
    const inner = attrs ? enterScope(attrs, scope) : scope
    const colon = qname.indexOf(':')
    const ns = colon < 0 ? inner.default : prefixNamespace(qname, colon, inner)
    const local = colon < 0 ? qname : qname.slice(colon + 1)
    const child = table.get(local)
    if (!child) throw invalid(`Unknown element '${local}'`, `${path}.${local}`)
    const { name, element, kind } = child
    // The narrative div is the one element in another namespace (XHTML), checked by readNarrative.
    if (kind !== 'xhtml' && ns !== FHIR_NS) {
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
      out[name] = readNarrative(node, qname, attrs, inner, pathOf(path, name, index), source)
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
function readPrimitive(
  nodes: XmlNode[],
  attrs: XmlAttrs | undefined,
  child: Child,
  out: any,
  parent: string,
  index: number,
  scope: Scope,
  source: string,
): void {
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
    // Whitespace between elements reads as nothing: `_name` appears only for real content.
    const content: any = ext ?? {}
    readChildren(nodes, typeDef, content, pathOf(parent, name, index), scope, source)
    if (Object.keys(content).length) ext = content
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
function primitiveValue(text: string, td: TypeDef): string | number | boolean | object | undefined {
  switch (td.name) {
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : undefined
    case 'integer':
    case 'unsignedInt':
    case 'positiveInt': {
      if (!td.regex?.test(text)) return undefined
      const n = Number(text)
      return Number.isFinite(n) ? n : undefined
    }
    case 'decimal':
      // The precision as written is kept (`1.50`), as parseFhirJson keeps it for JSON.
      if (!td.regex?.test(text) || !Number.isFinite(Number(text))) return undefined
      return decimalFromText(text)
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
