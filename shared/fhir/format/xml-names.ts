// XML namespaces over fast-xml-parser's output, which keeps names as written (`h:div`, `xmlns:h`):
// scopes of declarations and the resolution of prefixes. https://www.w3.org/TR/xml-names/
import { attributeValue } from './xml-text'
import { xmlError } from './xml-error'

export const XHTML_NS = 'http://www.w3.org/1999/xhtml'
export const XML_NS = 'http://www.w3.org/XML/1998/namespace'
export const XMLNS_NS = 'http://www.w3.org/2000/xmlns/'

export interface Scope {
  default: string
  prefixes: Map<string, string> | null
  parent: Scope | null
}

export const ROOT_SCOPE: Scope = { default: '', prefixes: new Map([['xml', XML_NS]]), parent: null }

/** The scope inside an element: the parent's, or a new one when the element declares namespaces. */
export function enterScope(attrs: Record<string, string>, scope: Scope): Scope {
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

function resolvePrefix(scope: Scope | null, prefix: string): string | undefined {
  for (let s = scope; s; s = s.parent) {
    const ns = s.prefixes?.get(prefix)
    if (ns !== undefined) return ns
  }
  return undefined
}

/** The namespace of a prefixed name (`colon` is where its prefix ends); throws when it is undeclared. */
export function prefixNamespace(qname: string, colon: number, scope: Scope): string {
  const prefix = qname.slice(0, colon)
  if (prefix === 'xmlns') return XMLNS_NS
  const ns = resolvePrefix(scope, prefix)
  if (ns === undefined) throw xmlError(`undeclared namespace prefix in ${qname}`)
  return ns
}

/** The namespace and local name of an element `qname` in `scope`. */
export function resolveElement(qname: string, scope: Scope): [ns: string, name: string] {
  const colon = qname.indexOf(':')
  return colon < 0 ? [scope.default, qname] : [prefixNamespace(qname, colon, scope), qname.slice(colon + 1)]
}

/** All bindings in scope as raw attribute values, to declare on an element cut out of its document. */
export function scopeDeclarations(scope: Scope): Record<string, string> {
  const out: Record<string, string> = {}
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

function escapeAttribute(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;')
}
