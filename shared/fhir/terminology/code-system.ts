// A CodeSystem resource as rows of the concept store: its concepts (nested ones flattened) and the
// transitive closure of its is-a hierarchy, from nesting and from the `parent`/`child`/`subsumedBy`
// properties. https://hl7.org/fhir/R4/codesystem.html#hierarchy
export interface FlatConcept {
  code: string
  display: string | null
  designation: unknown[] | null
  property: unknown[] | null
}

export interface FlatCodeSystem {
  url: string
  version: string | null
  name: string | null
  content: string | null
  concepts: FlatConcept[]
  /** [ancestor, descendant, depth]; every concept is its own ancestor at depth 0. */
  closure: [string, string, number][]
}

const PARENT_PROPERTIES = new Set(['parent', 'subsumedBy'])

/** Undefined when the resource is not a usable code system (no url, or a supplement). */
export function flattenCodeSystem(cs: any): FlatCodeSystem | undefined {
  if (!cs || typeof cs.url !== 'string' || cs.url === '' || cs.content === 'supplement') return undefined
  const concepts = new Map<string, FlatConcept>()
  const parents = new Map<string, Set<string>>()
  const link = (parent: string, child: string) => {
    if (parent === child) return
    let set = parents.get(child)
    if (!set) parents.set(child, (set = new Set()))
    set.add(parent)
  }
  const walk = (list: unknown, parent?: string) => {
    if (!Array.isArray(list)) return
    for (const c of list) {
      if (!c || typeof c.code !== 'string' || c.code === '') continue
      if (!concepts.has(c.code)) {
        concepts.set(c.code, {
          code: c.code,
          display: typeof c.display === 'string' ? c.display : null,
          designation: Array.isArray(c.designation) && c.designation.length > 0 ? c.designation : null,
          property: Array.isArray(c.property) && c.property.length > 0 ? c.property : null,
        })
      }
      if (parent !== undefined) link(parent, c.code)
      for (const p of Array.isArray(c.property) ? c.property : []) {
        if (typeof p?.valueCode !== 'string') continue
        if (PARENT_PROPERTIES.has(p.code)) link(p.valueCode, c.code)
        else if (p.code === 'child') link(c.code, p.valueCode)
      }
      walk(c.concept, c.code)
    }
  }
  walk(cs.concept)
  return {
    url: cs.url,
    version: typeof cs.version === 'string' ? cs.version : null,
    name: typeof cs.name === 'string' ? cs.name : typeof cs.title === 'string' ? cs.title : null,
    content: typeof cs.content === 'string' ? cs.content : null,
    concepts: [...concepts.values()],
    closure: closureOf([...concepts.keys()], parents),
  }
}

// Breadth-first up the parent links from each concept: the shortest depth to every ancestor (a
// polyhierarchy reaches one ancestor by several paths; a cycle stops at concepts already seen).
function closureOf(codes: string[], parents: Map<string, Set<string>>): [string, string, number][] {
  const known = new Set(codes)
  const out: [string, string, number][] = []
  for (const code of codes) {
    out.push([code, code, 0])
    const seen = new Set([code])
    let frontier = [code]
    for (let depth = 1; frontier.length > 0; depth++) {
      const next: string[] = []
      for (const c of frontier) {
        for (const p of parents.get(c) ?? []) {
          if (seen.has(p) || !known.has(p)) continue
          seen.add(p)
          out.push([p, code, depth])
          next.push(p)
        }
      }
      frontier = next
    }
  }
  return out
}
