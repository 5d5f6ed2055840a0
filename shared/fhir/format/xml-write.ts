// FHIR JSON -> FHIR XML, driven by the element tables: element order, attributes, primitives with
// their `_name` companions, resources wrapped in an element named by their type, raw XHTML narrative.
// https://hl7.org/fhir/R4/xml.html
import { invalid } from '../../errors'
import { type TypeDef, getTypeDef } from '../definitions/elements'
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
  /** Position among its siblings in the definition. */
  order: number
  array: boolean
  typeDef: TypeDef
  kind: 'attribute' | 'primitive' | 'xhtml' | 'resource' | 'complex'
  /** The table of the property's type, once first needed. */
  table?: WriteTable
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
    const prop: Property = { name, extName: '_' + name, order: element.order, array: element.array, typeDef, kind }
    table.properties.set(name, prop)
    if (kind === 'primitive') table.properties.set(prop.extName, prop)
    if (kind === 'attribute') table.attributes.push(name)
  }
  writeTables.set(td, table)
  return table
}

const tableOf = (p: Property): WriteTable => (p.table ??= writeTableOf(p.typeDef))

export function toFhirXml(resource: any, opts: { pretty?: boolean } = {}): string {
  const w = new XmlWriter(!!opts.pretty)
  w.out = '<?xml version="1.0" encoding="UTF-8"?>'
  w.writeResource(resource, 0, true)
  return opts.pretty ? w.out + '\n' : w.out
}

class XmlWriter {
  out = ''
  private pending: string | undefined
  private readonly indents: string[] = []
  // The path of the element being written, kept as a stack and made into text only for an error:
  // names, and indexes (-1 unless repeating).
  private readonly names: string[] = []
  private readonly indexes: number[] = []

  constructor(private readonly pretty: boolean) {}

  private newline(depth: number): string {
    if (!this.pretty) return ''
    return (this.indents[depth] ??= '\n' + '  '.repeat(depth))
  }

  /** The FHIRPath-like path of the current element, with `child` appended when given. */
  private path(child?: string): string {
    let out = ''
    for (let i = 0; i < this.names.length; i++) {
      out += (i ? '.' : '') + this.names[i] + (this.indexes[i] < 0 ? '' : `[${this.indexes[i]}]`)
    }
    return child === undefined ? out : out ? `${out}.${child}` : child
  }

  private enter(name: string, index: number): void {
    this.names.push(name)
    this.indexes.push(index)
  }

  private leave(): void {
    this.names.pop()
    this.indexes.pop()
  }

  writeResource(resource: any, depth: number, root = false): void {
    if (depth > MAX_DEPTH) throw invalid(`Resource nested deeper than ${MAX_DEPTH}`, this.path())
    const type = resource?.resourceType
    const td = typeof type === 'string' ? getTypeDef(type) : undefined
    if (!td || td.kind !== 'resource' || td.abstract) throw invalid(`Unknown resource type '${type}'`, this.path('resourceType'))
    this.flush()
    this.out += this.newline(depth) + '<' + type + (root ? ` xmlns="${FHIR_NS}">` : '>')
    // At the root the path starts with the type name; nested, it continues the parent's path.
    if (root) this.enter(type, -1)
    this.writeChildren(resource, writeTableOf(td), true, depth + 1)
    if (root) this.leave()
    this.out += this.newline(depth) + '</' + type + '>'
  }

  /**
   * Writes element `p.name` of a complex type, or of a primitive type when `value` (escaped) is
   * given; `obj` holds the children and attributes. The path is already entered.
   */
  private writeElement(p: Property, obj: any, depth: number, value?: string): void {
    if (obj === undefined) {
      this.flush()
      this.out += this.newline(depth) + '<' + p.name + ' value="' + value + '"/>'
      return
    }
    if (depth > MAX_DEPTH) throw invalid(`Resource nested deeper than ${MAX_DEPTH}`, this.path())
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw invalid(`Expected an object`, this.path())
    const table = tableOf(p)
    let open = this.newline(depth) + '<' + p.name
    for (const attr of table.attributes) {
      const v = obj[attr]
      if (v === undefined) continue
      const text = typeof v === 'string' ? escapeAttr(v) : undefined
      if (text === undefined) throw invalid(`Expected a string XML can carry`, this.path(attr))
      open += ' ' + attr + '="' + text + '"'
    }
    if (value !== undefined) open += ' value="' + value + '"'
    // The start tag waits in `pending` until a child is written, so an element without children
    // comes out as <name .../>.
    this.flush()
    this.pending = open
    this.writeChildren(obj, table, false, depth + 1)
    if (this.pending === open) {
      this.out += open + '/>'
      this.pending = undefined
    } else this.out += this.newline(depth) + '</' + p.name + '>'
  }

  private flush(): void {
    if (this.pending !== undefined) {
      this.out += this.pending + '>'
      this.pending = undefined
    }
  }

  private writeChildren(obj: any, table: WriteTable, resource: boolean, depth: number): void {
    const properties = table.properties
    // Triples (property, value, `_name` value), in the object's key order; values are taken inside
    // the for-in, where reading the enumerated key is cheapest.
    const entries: any[] = []
    let sorted = true
    let last = -1
    let extFirst = false
    for (const key in obj) {
      const prop = properties.get(key)
      if (!prop) {
        if (resource && key === 'resourceType') continue
        throw invalid(`Unknown property '${key}'`, this.path(key))
      }
      if (prop.kind === 'attribute') continue
      const v = obj[key]
      if (prop.kind === 'primitive' && (key !== prop.name || extFirst)) {
        // `_x` joins the entry of `x` (usually just before it), or starts one `x` will join.
        let at = entries.length - 3
        while (at >= 0 && entries[at] !== prop) at -= 3
        if (at >= 0) {
          entries[key === prop.name ? at + 1 : at + 2] = v
          continue
        }
        if (key !== prop.name) extFirst = true
      }
      if (last > prop.order) sorted = false
      last = prop.order
      if (key === prop.name) entries.push(prop, v, undefined)
      else entries.push(prop, undefined, v)
    }
    if (!sorted) sortEntries(entries)
    for (let e = 0; e < entries.length; e += 3) {
      const p: Property = entries[e]
      const value = entries[e + 1]
      const ext = entries[e + 2]
      if (p.array) {
        if ((value != null && !Array.isArray(value)) || (ext != null && !Array.isArray(ext))) throw invalid(`Expected an array`, this.path(p.name))
        const n = Math.max(value?.length ?? 0, ext?.length ?? 0)
        for (let i = 0; i < n; i++) this.writeValue(p, value?.[i], ext?.[i], depth, i)
      } else {
        this.writeValue(p, value, ext, depth, -1)
      }
    }
  }

  /** Writes one value of property `p` of the current object; `index` is -1 unless repeating. */
  private writeValue(p: Property, value: any, ext: any, depth: number, index: number): void {
    if (value == null && ext == null) return
    this.enter(p.name, index)
    switch (p.kind) {
      case 'resource':
        // https://hl7.org/fhir/R4/xml.html#resource: a resource inside an element is wrapped in an
        // element named by its type, e.g. <contained><Patient>...</Patient></contained>.
        this.flush()
        this.out += this.newline(depth) + '<' + p.name + '>'
        this.writeResource(value, depth + 1)
        this.out += this.newline(depth) + '</' + p.name + '>'
        break
      case 'xhtml':
        // `_div` (id/extension on the narrative) has no XML form: the div is XHTML, not a FHIR element.
        this.flush()
        this.out += this.newline(depth) + narrativeXhtml(value, this.path())
        break
      case 'primitive': {
        let text: string | undefined
        if (value != null) {
          const raw = primitiveText(value)
          text = raw === undefined ? undefined : escapeAttr(raw)
          // https://hl7.org/fhir/R4/datatypes.html#string: no control characters other than tab,
          // CR and LF; XML 1.0 cannot carry them at all.
          if (text === undefined) throw invalid(`Expected a primitive value XML can carry`, this.path())
        }
        this.writeElement(p, ext ?? undefined, depth, text)
        break
      }
      default:
        this.writeElement(p, value, depth)
    }
    this.leave()
  }
}

/** Sorts (property, value, ext) triples by the property's position in the definition. */
function sortEntries(entries: any[]): void {
  const triples: [Property, any, any][] = []
  for (let e = 0; e < entries.length; e += 3) triples.push([entries[e], entries[e + 1], entries[e + 2]])
  triples.sort((a, b) => a[0].order - b[0].order)
  triples.forEach((t, i) => {
    entries[3 * i] = t[0]
    entries[3 * i + 1] = t[1]
    entries[3 * i + 2] = t[2]
  })
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
