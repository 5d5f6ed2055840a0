// The code system of a `code` element's value, from its required binding: HAPI indexes such codes with
// the system of their enumeration (Patient.gender -> http://hl7.org/fhir/administrative-gender|male), so
// `gender=http://hl7.org/fhir/administrative-gender|male` matches as well as `gender=male`.
// https://hl7.org/fhir/R4/search.html#token
import { typeDefinitions } from '../../definitions/elements'
import { loadDefinitionBundle } from '../../definitions/load'

interface Systems {
  /** The one system every code comes from, when the value set draws on a single system. */
  single?: string
  byCode?: Map<string, string>
}

let valueSets: Map<string, any> | undefined
let codeSystems: Map<string, any> | undefined
const cache = new Map<string, Systems | null>()

/** The system of `code` under the required binding `valueSet`; null when unknown. */
export function systemForCode(valueSet: string, code: string): string | null {
  let systems = cache.get(valueSet)
  if (systems === undefined) {
    systems = build(valueSet)
    cache.set(valueSet, systems)
  }
  if (!systems) return null
  return systems.single ?? systems.byCode?.get(code) ?? null
}

/**
 * Builds the systems of every required binding of a `code` element at start-up (prepare.ts), so that the
 * first write does not load and read the R4 value sets bundle, and lets that bundle go.
 */
export function prepareCodeSystems(): void {
  for (const type of typeDefinitions().values()) {
    for (const el of type.elements.values()) {
      if (el.requiredBinding && el.types.includes('code') && !cache.has(el.requiredBinding)) cache.set(el.requiredBinding, build(el.requiredBinding))
    }
  }
  valueSets = undefined
  codeSystems = undefined
}

function build(url: string): Systems | null {
  if (!valueSets) {
    valueSets = new Map()
    codeSystems = new Map()
    for (const { resource } of loadDefinitionBundle('valuesets.json').entry) {
      if (resource.resourceType === 'ValueSet') valueSets.set(resource.url, resource)
      else if (resource.resourceType === 'CodeSystem') codeSystems.set(resource.url, resource)
    }
  }
  const includes: any[] = valueSets.get(url)?.compose?.include ?? []
  const systems = new Set(includes.map((i) => i.system).filter(Boolean))
  if (systems.size === 0) return null
  if (systems.size === 1 && !includes.some((i) => i.valueSet)) return { single: [...systems][0] }
  const byCode = new Map<string, string>()
  const addAll = (system: string, concepts: any[] | undefined) => {
    for (const c of concepts ?? []) {
      if (!byCode.has(c.code)) byCode.set(c.code, system)
      addAll(system, c.concept)
    }
  }
  for (const i of includes) {
    if (!i.system) continue
    addAll(i.system, i.concept?.length ? i.concept : codeSystems!.get(i.system)?.concept)
  }
  return { byCode }
}
