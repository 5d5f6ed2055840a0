// References inside the resources of a Bundle rewritten: placeholders (fullUrls such as urn:uuid:...) by
// the ids they were given, conditional references (`Organization?identifier=...`) by their match.
// Finding references in any resource is ../references.ts.
// https://hl7.org/fhir/R4/http.html#trules  https://hl7.org/fhir/R4/http.html#cond-refs
import { isResourceType } from '../definitions/resource-types'
import type { FoundReference } from '../references'

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
