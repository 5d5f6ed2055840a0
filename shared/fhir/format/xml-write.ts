// FHIR JSON -> FHIR XML, driven by the element tables: element order, attributes, primitives with
// their `_name` companions, resources wrapped in an element named by their type, raw XHTML narrative.
// https://hl7.org/fhir/R4/xml.html
import { invalid } from '../../errors'
import { type ElementDef, type TypeDef, getTypeDef } from '../definitions/elements'
import { readXml, XHTML_NS } from './xml-reader'

const FHIR_NS = 'http://hl7.org/fhir'
/** Far beyond any real resource; keeps hostile JSON from exhausting the stack. */
const MAX_DEPTH = 1000

interface Property {
  /** JSON property name without the `_` prefix, e.g. `valueQuantity`. */
  name: string
  element: ElementDef
  type: string
}

export function toFhirXml(resource: any, opts: { pretty?: boolean } = {}): string {
  const w = new XmlWriter(!!opts.pretty)
  w.out = '<?xml version="1.0" encoding="UTF-8"?>'
  w.writeResource(resource, 0, '', true)
  return opts.pretty ? w.out + '\n' : w.out
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

  /** Writes an element of a complex type, or of a primitive type when `value` is given. */
  private writeElement(name: string, obj: any, td: TypeDef, depth: number, path: string, value?: string): void {
    if (depth > MAX_DEPTH) throw invalid(`Resource nested deeper than ${MAX_DEPTH}`, path)
    if (obj !== undefined && (obj === null || typeof obj !== 'object' || Array.isArray(obj))) {
      throw invalid(`Expected an object`, path)
    }
    let open = this.newline(depth) + '<' + name
    // Element.id and Extension.url are attributes, in definition order (id before url).
    if (obj) {
      for (const el of td.elements.values()) {
        if (!el.representation?.includes('xmlAttr')) continue
        const v = obj[el.name]
        if (v === undefined) continue
        if (typeof v !== 'string') throw invalid(`Expected a string`, `${path}.${el.name}`)
        open += ' ' + el.name + '="' + escapeAttr(v, `${path}.${el.name}`) + '"'
      }
    }
    if (value !== undefined) open += ' value="' + value + '"'
    // The start tag waits in `pending` until a child is written, so an element without children
    // comes out as <name .../>.
    this.flush()
    this.pending = open
    if (obj) this.writeChildren(obj, td, depth + 1, path)
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
    const props: Property[] = []
    let sorted = true
    for (const key in obj) {
      if (key === 'resourceType' && td.kind === 'resource') continue
      const name = key.charCodeAt(0) === 95 /* _ */ ? key.slice(1) : key
      if (name !== key && Object.hasOwn(obj, name)) continue // `_x` goes with `x`
      const prop = td.properties.get(name)
      if (!prop) throw invalid(`Unknown property '${key}'`, `${path}.${key}`)
      if (prop.element.representation?.includes('xmlAttr')) {
        if (name !== key) throw invalid(`Unknown property '${key}'`, `${path}.${key}`)
        continue
      }
      if (name !== key && getTypeDef(prop.type)?.kind !== 'primitive-type') {
        throw invalid(`Unknown property '${key}'`, `${path}.${key}`)
      }
      if (props.length && props[props.length - 1].element.order > prop.element.order) sorted = false
      props.push({ name, element: prop.element, type: prop.type })
    }
    if (!sorted) props.sort((a, b) => a.element.order - b.element.order)
    for (const p of props) {
      const value = obj[p.name]
      const ext = obj['_' + p.name]
      const childPath = `${path}.${p.name}`
      if (p.element.array) {
        if ((value != null && !Array.isArray(value)) || (ext != null && !Array.isArray(ext))) {
          throw invalid(`Expected an array`, childPath)
        }
        const n = Math.max(value?.length ?? 0, ext?.length ?? 0)
        for (let i = 0; i < n; i++) this.writeValue(p, value?.[i], ext?.[i], depth, `${childPath}[${i}]`)
      } else {
        this.writeValue(p, value, ext, depth, childPath)
      }
    }
  }

  private writeValue(p: Property, value: any, ext: any, depth: number, path: string): void {
    if (value == null && ext == null) return
    const td = getTypeDef(p.type)
    if (!td) throw invalid(`No definition for type '${p.type}'`, path)
    if (td.kind === 'resource') {
      // https://hl7.org/fhir/R4/xml.html#resource: a resource inside an element is wrapped in an
      // element named by its type, e.g. <contained><Patient>...</Patient></contained>.
      this.flush()
      this.out += this.newline(depth) + '<' + p.name + '>'
      this.writeResource(value, depth + 1, path)
      this.out += this.newline(depth) + '</' + p.name + '>'
    } else if (p.type === 'xhtml') {
      // `_div` (id/extension on the narrative) has no XML form: the div is XHTML, not a FHIR element.
      if (value == null) return
      this.flush()
      this.out += this.newline(depth) + checkXhtml(value, path)
    } else if (td.kind === 'primitive-type') {
      const text = value == null ? undefined : primitiveText(value, path)
      this.writeElement(p.name, ext ?? undefined, td, depth, path, text)
    } else {
      this.writeElement(p.name, value, td, depth, path)
    }
  }
}

function primitiveText(value: any, path: string): string {
  switch (typeof value) {
    case 'string':
      return escapeAttr(value, path)
    case 'number':
      if (!Number.isFinite(value)) throw invalid(`Invalid number`, path)
      return String(value)
    case 'boolean':
      return value ? 'true' : 'false'
    default:
      throw invalid(`Expected a primitive value`, path)
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

function escapeAttr(s: string, path: string): string {
  if (!ATTR_SPECIAL.test(s)) return s
  return s.replace(ATTR_SPECIAL_G, (c) => {
    const e = ATTR_ENTITY[c]
    // https://hl7.org/fhir/R4/datatypes.html#string: no control characters other than tab, CR, LF;
    // XML 1.0 cannot carry them at all.
    if (!e) throw invalid(`Character U+${c.charCodeAt(0).toString(16).padStart(4, '0')} cannot be written in XML`, path)
    return e
  })
}

// https://hl7.org/fhir/R4/narrative.html#xhtml: the div is written as is. It must be well-formed and
// in the XHTML namespace, or it would break (or inject into) the document around it.
function checkXhtml(div: any, path: string): string {
  if (typeof div !== 'string') throw invalid(`Narrative div must be a string`, path)
  let root
  try {
    root = readXml(div, { maxDepth: 1000 })
  } catch (err) {
    throw invalid(`Narrative div is not well-formed XHTML: ${(err as Error).message}`, path)
  }
  if (root.name !== 'div') throw invalid(`Narrative must be a <div> element`, path)
  const xhtml = root.start === 0 && root.end === div.length ? div : div.slice(root.start, root.end)
  if (root.ns === XHTML_NS) return xhtml
  if (root.ns !== '' || root.qname !== 'div') throw invalid(`Narrative div must be in the XHTML namespace`, path)
  return `<div xmlns="${XHTML_NS}"` + xhtml.slice(4)
}
