// The codes of an R4 value set, when the definitions package alone can expand it: compose.include of
// whole complete code systems, of listed concepts, or of other such value sets, minus compose.exclude.
// Filters, external systems (UCUM, BCP-13, ISO 4217...) and fragment code systems give undefined.
// https://hl7.org/fhir/R4/valueset.html#compositions
import { loadDefinitionBundle } from './load'

const FILES = ['valuesets.json', 'v3-codesystems.json']

let valueSets: Map<string, any> | undefined
let codeSystems: Map<string, any> | undefined
const expanded = new Map<string, ReadonlySet<string> | null>()

function index(): void {
  valueSets = new Map()
  codeSystems = new Map()
  for (const file of FILES) {
    for (const { resource } of loadDefinitionBundle(file).entry) {
      const map = resource.resourceType === 'ValueSet' ? valueSets : resource.resourceType === 'CodeSystem' ? codeSystems : undefined
      if (map && resource.url && !map.has(resource.url)) map.set(resource.url, resource)
    }
  }
}

function addConcepts(concepts: any[] | undefined, out: Set<string>): void {
  for (const c of concepts ?? []) {
    out.add(c.code)
    addConcepts(c.concept, out) // hierarchical code systems nest concepts
  }
}

// "All codes in a code system" needs the whole system; content other than complete cannot give it.
// https://hl7.org/fhir/R4/codesystem-definitions.html#CodeSystem.content
function codeSystemCodes(system: string): Set<string> | undefined {
  const cs = codeSystems!.get(system)
  if (!cs || cs.content !== 'complete') return undefined
  const out = new Set<string>()
  addConcepts(cs.concept, out)
  return out
}

// One include or exclude: the codes of its system part intersected with those of each value set it
// names; includes are then unioned and excludes subtracted.
function expandInclude(include: any, seen: Set<string>): Set<string> | undefined {
  if (include.filter?.length) return undefined
  let codes: Set<string> | undefined
  if (include.system) {
    if (include.concept?.length) {
      codes = new Set()
      for (const c of include.concept) codes.add(c.code)
    } else codes = codeSystemCodes(include.system)
    if (!codes) return undefined
  }
  for (const url of include.valueSet ?? []) {
    const other = expand(String(url).split('|')[0], seen)
    if (!other) return undefined
    codes = codes ? new Set([...codes].filter((c) => other.has(c))) : new Set(other)
  }
  return codes
}

function expand(url: string, seen: Set<string>): ReadonlySet<string> | undefined {
  const cached = expanded.get(url)
  if (cached !== undefined) return cached ?? undefined
  if (seen.has(url)) return undefined
  seen.add(url)
  const vs = valueSets!.get(url)
  let result: Set<string> | undefined
  if (vs?.compose?.include?.length) {
    result = new Set()
    for (const include of vs.compose.include) {
      const codes = expandInclude(include, seen)
      if (!codes) {
        result = undefined
        break
      }
      for (const c of codes) result.add(c)
    }
    for (const exclude of vs.compose.exclude ?? []) {
      if (!result) break
      const codes = expandInclude(exclude, seen)
      if (!codes) result = undefined
      else for (const c of codes) result.delete(c)
    }
  } else if (vs?.expansion?.contains?.length) {
    result = new Set()
    const walk = (items: any[]) => {
      for (const item of items) {
        if (item.code) result!.add(item.code)
        if (item.contains) walk(item.contains)
      }
    }
    walk(vs.expansion.contains)
  }
  expanded.set(url, result ?? null)
  return result
}

/** Codes of the value set (canonical without version), or undefined when it cannot be expanded here. */
export function valueSetCodes(url: string): ReadonlySet<string> | undefined {
  if (!valueSets) index()
  return expand(url.split('|')[0], new Set())
}

/** Forgets the raw value sets and code systems; expansions already made stay cached. */
export function releaseValueSetSources(): void {
  valueSets = undefined
  codeSystems = undefined
}
