// The narrative div in FHIR XML -> JSON: https://hl7.org/fhir/R4/json.html#xhtml, the div is a string
// of XHTML with its namespace declared. XMLParser keeps every div as a stop node, so its XHTML is cut
// from the source as written; only a div relying on prefixes declared outside it is rewritten.
import { invalid } from '../../errors'
import { xmlError } from './xml-error'
import { resolveElement, type Scope, scopeDeclarations, XHTML_NS, XML_NS, XMLNS_NS } from './xml-names'
import { readXml, sourceRange, TEXT, type XmlAttrs, type XmlElement, type XmlNode } from './xml-reader'
import { attributeValue, checkRawContent } from './xml-text'

/** Narrative XHTML is read as a document of its own only when it must be rewritten. */
const XHTML_MAX_DEPTH = 1000
const DIV_STOP_NODES = ['*.div']

/** The stop nodes for `text`: every div, and every prefixed div (<h:div>) under its own prefix. */
export function narrativeStopNodes(text: string): string[] {
  if (!text.includes(':div')) return DIV_STOP_NODES
  const prefixes = new Set<string>()
  for (const m of text.matchAll(/<([^\s<>/!?:]+):div[\s/>]/g)) prefixes.add(m[1])
  return prefixes.size ? [...DIV_STOP_NODES, ...[...prefixes].map((p) => `*.${p}:div`)] : DIV_STOP_NODES
}

/** The JSON string of the div element `node` (read as a stop node from `source`) in `scope`. */
export function readNarrative(node: XmlNode, qname: string, attrs: XmlAttrs | undefined, scope: Scope, path: string, source: string): string {
  const [ns, name] = resolveElement(qname, scope)
  if (ns !== XHTML_NS || name !== 'div') throw invalid(`Narrative must be an XHTML <div>`, path)
  const content: XmlNode[] = node[qname]
  if (content.length !== 1 || typeof content[0][TEXT] !== 'string') throw xmlError(`narrative <${qname}> was not kept as raw XHTML`)
  const raw: string = content[0][TEXT]
  for (const a in attrs) attributeValue(attrs[a], a)
  checkRawContent(raw)
  const [start, end] = sourceRange(node)
  const declared = qname === 'div' && attrs?.xmlns !== undefined
  if (declared && !mayUsePrefixes(raw)) return source.slice(start, end)
  const div = readXml(startTag(qname, { ...scopeDeclarations(scope), ...attrs }) + raw + `</${qname}>`, { maxDepth: XHTML_MAX_DEPTH })
  return declared && !usesPrefixes(div) ? source.slice(start, end) : writeXhtml(div, true, path)
}

/** Whether raw XHTML may have a prefixed element or attribute (other than xml:); a cheap pre-check. */
function mayUsePrefixes(raw: string): boolean {
  return raw.includes(':') && /<[^\s<>/!?]*:|\s(?!xml:|xmlns)[^\s=<>"'/]+:[^\s=<>"'/]*\s*=\s*["']/.test(raw)
}

function usesPrefixes(el: XmlElement): boolean {
  if (el.qname.includes(':')) return true
  for (const a of el.attrs) if (a.qname.includes(':') && a.ns !== XML_NS && a.ns !== XMLNS_NS) return true
  for (const c of el.children) if (typeof c !== 'string' && usesPrefixes(c)) return true
  return false
}

/** A start tag from raw attribute values (as the parser keeps them), with double quotes. */
function startTag(qname: string, attrs: XmlAttrs): string {
  let s = '<' + qname
  for (const key in attrs) {
    const raw = attrs[key]
    s += ' ' + key + '="' + (raw.includes('"') ? raw.replace(/"/g, '&quot;') : raw) + '"'
  }
  return s + '>'
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
