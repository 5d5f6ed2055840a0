// References inside a resource: every `reference` value with where it is, the local `Type/id` a value
// names, and the references rewritten in place: placeholders (fullUrls such as urn:uuid:...) by the ids
// they were given, conditional references (`Organization?identifier=...`) by their match. The
// referential-integrity check, writes and Bundle processing use them.
// https://hl7.org/fhir/R4/references.html  https://hl7.org/fhir/R4/http.html#trules
import { isResourceType } from './definitions/resource-types'

export interface FoundReference {
  value: string
  /** FHIRPath-like location, e.g. `Observation.subject`. */
  path: string
}

const LOCAL = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/

export function localTarget(value: string): { type: string; id: string } | undefined {
  const m = LOCAL.exec(value)
  return m && isResourceType(m[1]) ? { type: m[1], id: m[2] } : undefined
}

/** Every `reference` string in the resource (contained resources included), with where it is. */
export function findReferences(resource: any): FoundReference[] {
  const out: FoundReference[] = []
  walk(resource, resource?.resourceType ?? '', (obj, key, path) => {
    if (key === 'reference' && typeof obj[key] === 'string') out.push({ value: obj[key], path })
  })
  return out
}

function walk(node: any, path: string, visit: (obj: any, key: string, path: string) => void): void {
  if (Array.isArray(node)) for (const v of node) walk(v, path, visit)
  else if (node && typeof node === 'object') {
    for (const k of Object.keys(node)) {
      visit(node, k, path)
      const v = node[k]
      if (v && typeof v === 'object') walk(v, `${path}.${k}`, visit)
    }
  }
}

const CONDITIONAL = /^([A-Z][A-Za-z]+)\?(.+)$/

export function isConditionalReference(value: string): boolean {
  const m = CONDITIONAL.exec(value)
  return !!m && isResourceType(m[1])
}

/**
 * Rewrites the references of `resource` in place (it is the request's own parsed copy; a second copy
 * would double a large Bundle's memory): `reference` values through `rewrite`, and any other string
 * that is exactly a placeholder of `placeholders` (uri and canonical elements) replaced too. Returns the
 * `reference` values as rewritten, as findReferences would list them.
 */
export function rewriteReferences(
  resource: any,
  rewrite: (value: string, path: string) => string | undefined,
  placeholders: Map<string, string>,
): FoundReference[] {
  const found: FoundReference[] = []
  rewriteIn(resource, resource?.resourceType ?? '', rewrite, placeholders, found)
  return found
}

function rewriteIn(
  node: any,
  path: string,
  rewrite: (v: string, p: string) => string | undefined,
  placeholders: Map<string, string>,
  found: FoundReference[],
): void {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const v = node[i]
      if (typeof v === 'string') node[i] = placeholders.get(v) ?? v
      else rewriteIn(v, path, rewrite, placeholders, found)
    }
  } else if (node && typeof node === 'object' && !JSON.isRawJSON(node)) {
    for (const k of Object.keys(node)) {
      const v = node[k]
      if (k === 'reference' && typeof v === 'string') {
        const value = rewrite(v, path) ?? v
        node[k] = value
        found.push({ value, path })
      } else if (typeof v === 'string') node[k] = placeholders.get(v) ?? v
      else if (v && typeof v === 'object') rewriteIn(v, k === 'resourceType' ? path : `${path}.${k}`, rewrite, placeholders, found)
    }
  }
}
