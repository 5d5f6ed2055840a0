// FHIR JSON -> FHIR XML, driven by the element tables: element order, attributes, primitives with
// their `_name` companions, resources wrapped in an element named by their type, raw XHTML narrative.
// https://hl7.org/fhir/R4/xml.html
import { invalid } from '../../errors'
import { type ElementDef, type TypeDef, getTypeDef } from '../definitions/elements'
import { narrativeXhtml } from './xhtml-check'
import { numberText } from './json'

const FHIR_NS = 'http://hl7.org/fhir'
/** Far beyond any real resource; keeps hostile JSON from exhausting the stack. */
const MAX_DEPTH = 1000

/** How one JSON property of a type is written, worked out once per type. */
interface Property {
  /** JSON property name without the `_` prefix, e.g. `valueQuantity`. */
  name: string
  /** `_name`, the JSON companion of a primitive. */
  extName: string
  element: ElementDef
  typeDef: TypeDef
  kind: 'attribute' | 'primitive' | 'xhtml' | 'resource' | 'complex'
}

interface WriteTable {
  /** By JSON key, `_name` keys included for primitives. */
  properties: Map<string, Property>
  /** Element.id, Extension.url: XML attributes, in definition order. */
  attributes: string[]
}

const writeTables = new WeakMap<TypeDef, WriteTable>()

function writeTableOf(td: TypeDef): WriteTable {
  let table = writeTables.get(td)
  if (table) return table
  table = { properties: new Map(), attributes: [] }
  for (const [name, { element, type }] of td.properties) {
    const typeDef = getTypeDef(type)
    if (!typeDef) continue
    const kind = element.representation?.includes('xmlAttr')
      ? 'attribute'
      : type === 'xhtml'
        ? 'xhtml'
        : typeDef.kind === 'primitive-type'
          ? 'primitive'
          : typeDef.kind === 'resource'
            ? 'resource'
            : 'complex'
    const prop: Property = { name, extName: '_' + name, element, typeDef, kind }
    table.properties.set(name, prop)
    if (kind === 'primitive') table.properties.set(prop.extName, prop)
    if (kind === 'attribute') table.attributes.push(name)
  }
  writeTables.set(td, table)
  return table
}

export function toFhirXml(resource: any, opts: { pretty?: boolean } = {}): string {
  const w = new XmlWriter(!!opts.pretty)
  w.out = '<?xml version="1.0" encoding="UTF-8"?>'
  w.writeResource(resource, 0, '', true)
  return opts.pretty ? w.out + '\n' : w.out
}

function pathOf(parent: string, name: string, index: number): string {
  return index < 0 ? `${parent}.${name}` : `${parent}.${name}[${index}]`
}

class XmlWriter {
  out = ''
  private pending: string | undefined
  private readonly indents: string[] = []

  constructor(private readonly pretty: boolean) {}

  private newline(depth: number): string {
    if (!this.pretty) return ''
    return (this.indents[depth] ??= '\n' + '  '.repeat(depth))
  }

  writeResource(resource: any, depth: number, path: string, root = false): void {
    if (depth > MAX_DEPTH) throw invalid(`Resource nested deeper than ${MAX_DEPTH}`, path)
    const type = resource?.resourceType
    const td = typeof type === 'string' ? getTypeDef(type) : undefined
    if (!td || td.kind !== 'resource' || td.abstract) {
      throw invalid(`Unknown resource type '${type}'`, path ? `${path}.resourceType` : 'resourceType')
    }
    this.flush()
    this.out += this.newline(depth) + '<' + type + (root ? ` xmlns="${FHIR_NS}">` : '>')
    this.writeChildren(resource, td, depth + 1, path ? path : type)
    this.out += this.newline(depth) + '</' + type + '>'
  }

  /**
   * Writes element `name` (at `parent`, `index` -1 unless repeating) of a complex type, or of a
   * primitive type when `value` (escaped) is given; `obj` holds the children and attributes.
   */
  private writeElement(name: string, obj: any, td: TypeDef, depth: number, parent: string, index: number, value?: string): void {
    if (obj === undefined) {
      this.flush()
      this.out += this.newline(depth) + '<' + name + ' value="' + value + '"/>'
      return
    }
    const path = pathOf(parent, name, index)
    if (depth > MAX_DEPTH) throw invalid(`Resource nested deeper than ${MAX_DEPTH}`, path)
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw invalid(`Expected an object`, path)
    let open = this.newline(depth) + '<' + name
    for (const attr of writeTableOf(td).attributes) {
      const v = obj[attr]
      if (v === undefined) continue
      const text = typeof v === 'string' ? escapeAttr(v) : undefined
      if (text === undefined) throw invalid(`Expected a string XML can carry`, `${path}.${attr}`)
      open += ' ' + attr + '="' + text + '"'
    }
    if (value !== undefined) open += ' value="' + value + '"'
    // The start tag waits in `pending` until a child is written, so an element without children
    // comes out as <name .../>.
    this.flush()
    this.pending = open
    this.writeChildren(obj, td, depth + 1, path)
    if (this.pending === open) {
      this.out += open + '/>'
      this.pending = undefined
    } else this.out += this.newline(depth) + '</' + name + '>'
  }

  private flush(): void {
    if (this.pending !== undefined) {
      this.out += this.pending + '>'
      this.pending = undefined
    }
  }

  private writeChildren(obj: any, td: TypeDef, depth: number, path: string): void {
    const table = writeTableOf(td).properties
    const props: Property[] = []
    let sorted = true
    for (const key in obj) {
      const prop = table.get(key)
      if (!prop) {
        if (key === 'resourceType' && td.kind === 'resource') continue
        throw invalid(`Unknown property '${key}'`, `${path}.${key}`)
      }
      if (prop.kind === 'attribute') continue
      if (key !== prop.name && obj[prop.name] !== undefined) continue // `_x` is written with `x`
      if (props.length && props[props.length - 1].element.order > prop.element.order) sorted = false
      props.push(prop)
    }
    if (!sorted) props.sort((a, b) => a.element.order - b.element.order)
    for (const p of props) {
      const value = obj[p.name]
      const ext = p.kind === 'primitive' ? obj[p.extName] : undefined
      if (p.element.array) {
        if ((value != null && !Array.isArray(value)) || (ext != null && !Array.isArray(ext))) {
          throw invalid(`Expected an array`, `${path}.${p.name}`)
        }
        const n = Math.max(value?.length ?? 0, ext?.length ?? 0)
        for (let i = 0; i < n; i++) this.writeValue(p, value?.[i], ext?.[i], depth, path, i)
      } else {
        this.writeValue(p, value, ext, depth, path, -1)
      }
    }
  }

  /** Writes one value of property `p` of the object at `parent`; `index` is -1 unless repeating. */
  private writeValue(p: Property, value: any, ext: any, depth: number, parent: string, index: number): void {
    if (value == null && ext == null) return
    switch (p.kind) {
      case 'resource':
        // https://hl7.org/fhir/R4/xml.html#resource: a resource inside an element is wrapped in an
        // element named by its type, e.g. <contained><Patient>...</Patient></contained>.
        this.flush()
        this.out += this.newline(depth) + '<' + p.name + '>'
        this.writeResource(value, depth + 1, pathOf(parent, p.name, index))
        this.out += this.newline(depth) + '</' + p.name + '>'
        return
      case 'xhtml':
        // `_div` (id/extension on the narrative) has no XML form: the div is XHTML, not a FHIR element.
        this.flush()
        this.out += this.newline(depth) + narrativeXhtml(value, pathOf(parent, p.name, index))
        return
      case 'primitive': {
        let text: string | undefined
        if (value != null) {
          const raw = primitiveText(value)
          text = raw === undefined ? undefined : escapeAttr(raw)
          // https://hl7.org/fhir/R4/datatypes.html#string: no control characters other than tab,
          // CR and LF; XML 1.0 cannot carry them at all.
          if (text === undefined) throw invalid(`Expected a primitive value XML can carry`, pathOf(parent, p.name, index))
        }
        this.writeElement(p.name, ext ?? undefined, p.typeDef, depth, parent, index, text)
        return
      }
      default:
        this.writeElement(p.name, value, p.typeDef, depth, parent, index)
    }
  }
}

/** The text of a JSON primitive, or undefined when it is not one. */
function primitiveText(value: any): string | undefined {
  switch (typeof value) {
    case 'string':
      return value
    case 'number':
      return Number.isFinite(value) ? String(value) : undefined
    case 'boolean':
      return value ? 'true' : 'false'
    default:
      return numberText(value) // a decimal kept as written
  }
}

// Tabs and line breaks are written as character references: attribute-value normalization would turn
// them into spaces otherwise. https://www.w3.org/TR/xml/#AVNormalize
const ATTR_SPECIAL = /[&<>"\t\n\r\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/
const ATTR_SPECIAL_G = new RegExp(ATTR_SPECIAL.source, 'g')
const ATTR_ENTITY: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
}

/** The attribute-escaped text, or undefined when it holds a character XML 1.0 cannot carry. */
function escapeAttr(s: string): string | undefined {
  if (!ATTR_SPECIAL.test(s)) return s
  let bad = false
  const out = s.replace(ATTR_SPECIAL_G, (c) => {
    const e = ATTR_ENTITY[c]
    if (!e) bad = true
    return e ?? ''
  })
  return bad ? undefined : out
}
