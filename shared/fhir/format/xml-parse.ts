// FHIR XML -> FHIR JSON, driven by the element tables: arrays from cardinality, primitives split into
// `name` and `_name`, JSON types for boolean and numbers, resources unwrapped, XHTML narrative verbatim.
// https://hl7.org/fhir/R4/xml.html and https://hl7.org/fhir/R4/json.html
import { AppError, invalid } from '../../errors'
import { type ElementDef, type TypeDef, getTypeDef } from '../definitions/elements'
import { readXml, XHTML_NS, XML_NS, XMLNS_NS, type XmlElement } from './xml-reader'

const FHIR_NS = 'http://hl7.org/fhir'
const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance'

export function parseFhirXml(text: string, opts: { maxDepth?: number } = {}): any {
  // https://hl7.org/fhir/R4/security.html#xml: refuse DTDs before reading a single element, so
  // entity-expansion attacks (billion laughs, external entities) cost one scan.
  if (text.includes('<!DOCTYPE') || text.includes('<!ENTITY')) {
    const message = 'XML with a DOCTYPE or ENTITY declaration is not accepted'
    throw new AppError('invalid', message, { issues: [{ severity: 'error', code: 'security', diagnostics: message }] })
  }
  const root = readXml(text, { maxDepth: opts.maxDepth ?? 100, dropWhitespaceIn: FHIR_NS })
  return readResource(root, '')
}

function readResource(el: XmlElement, path: string): any {
  const where = path || el.name
  if (el.ns !== FHIR_NS) throw invalid(`Element <${el.qname}> is not in the FHIR namespace ${FHIR_NS}`, where)
  const td = getTypeDef(el.name)
  if (!td || td.kind !== 'resource' || td.abstract) throw invalid(`Unknown resource type '${el.name}'`, where)
  const out: any = { resourceType: el.name }
  readChildren(el, td, out, path || el.name)
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

/** Reads the attributes and children of an element of a complex type into `out`. */
function readChildren(el: XmlElement, td: TypeDef, out: any, path: string): void {
  for (const a of el.attrs) {
    if (a.ns !== '') {
      // Namespace declarations, xml:space / xml:lang and xsi:schemaLocation carry no FHIR content.
      if (a.ns === XMLNS_NS || a.ns === XML_NS || a.ns === XSI_NS) continue
      throw invalid(`Unknown attribute '${a.qname}'`, `${path}.@${a.qname}`)
    }
    const prop = td.properties.get(a.name)
    if (!prop || !prop.element.representation?.includes('xmlAttr')) {
      throw invalid(`Unknown attribute '${a.name}'`, `${path}.@${a.name}`)
    }
    out[a.name] = a.value
  }

  const table = childrenOf(td)
  let primitiveArrays: Child[] | undefined
  let choices: [ElementDef, string][] | undefined
  for (const node of el.children) {
    if (typeof node === 'string') throw invalid(`Text is not allowed here: '${node.trim().slice(0, 40)}'`, path)
    const child = table.get(node.name)
    if (!child) throw invalid(`Unknown element '${node.name}'`, `${path}.${node.name}`)
    const { name, element, kind } = child
    // The narrative div is the one element in another namespace (XHTML), checked by readXhtml.
    if (node.ns !== FHIR_NS && kind !== 'xhtml') {
      throw invalid(`Element <${node.qname}> is not in the FHIR namespace ${FHIR_NS}`, `${path}.${name}`)
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

    if (kind === 'primitive') {
      readPrimitive(node, child, out, path, index)
      if (index === 0) (primitiveArrays ??= []).push(child)
    } else if (kind === 'xhtml') {
      out[name] = readXhtml(node, pathOf(path, name, index))
    } else {
      let value: any
      if (kind === 'resource') {
        value = readContainedResource(node, child.type, pathOf(path, name, index))
      } else {
        value = {}
        readChildren(node, child.typeDef, value, pathOf(path, name, index))
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

/**
 * A primitive: the `value` attribute, an `id` attribute and `extension` children, into `name` and
 * `_name` of `out`. https://hl7.org/fhir/R4/json.html#primitive: repeating primitives are parallel
 * arrays, with null where one side has nothing.
 */
function readPrimitive(el: XmlElement, child: Child, out: any, parent: string, index: number): void {
  const { name, extName, typeDef } = child
  let text: string | undefined
  let ext: any
  for (const a of el.attrs) {
    if (a.ns !== '') {
      if (a.ns === XMLNS_NS || a.ns === XML_NS) continue
      throw invalid(`Unknown attribute '${a.qname}'`, `${pathOf(parent, name, index)}.@${a.qname}`)
    }
    if (a.name === 'value') text = a.value
    else if (a.name === 'id') (ext ??= {}).id = a.value
    else throw invalid(`Unknown attribute '${a.name}'`, `${pathOf(parent, name, index)}.@${a.name}`)
  }
  if (el.children.length) {
    ext ??= {}
    readChildren({ ...el, attrs: [] }, typeDef, ext, pathOf(parent, name, index))
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
function readContainedResource(el: XmlElement, type: string, path: string): any {
  if (el.attrs.some((a) => a.ns === '')) throw invalid(`Attributes are not allowed on <${el.name}>`, path)
  const inner = el.children[0]
  if (el.children.length !== 1 || typeof inner === 'string') throw invalid(`<${el.name}> must contain exactly one resource`, path)
  const resource = readResource(inner, path)
  if (type !== 'Resource' && resource.resourceType !== type) {
    throw invalid(`Expected a ${type}, found ${resource.resourceType}`, path)
  }
  return resource
}

// https://hl7.org/fhir/R4/json.html#xhtml: the div is a string of XHTML with its namespace declared.
// It is cut from the source as is, unless it relies on prefixes declared outside it.
function readXhtml(el: XmlElement, path: string): string {
  if (el.ns !== XHTML_NS || el.name !== 'div') throw invalid(`Narrative must be an XHTML <div>`, path)
  const declared = el.qname === 'div' && el.attrs.some((a) => a.qname === 'xmlns')
  if (declared && !usesPrefixes(el)) return el.source.slice(el.start, el.end)
  return writeXhtml(el, true, path)
}

function usesPrefixes(el: XmlElement): boolean {
  if (el.qname.includes(':')) return true
  for (const a of el.attrs) if (a.qname.includes(':') && a.ns !== XML_NS) return true
  for (const c of el.children) if (typeof c !== 'string' && usesPrefixes(c)) return true
  return false
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
