// References inside a resource: every `reference` value with where it is, and the local `Type/id` a
// value names. The referential-integrity check and Bundle processing read them.
// https://hl7.org/fhir/R4/references.html
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
