// The 146 concrete R4 resource types, from the definitions package.
// https://hl7.org/fhir/R4/resourcelist.html
import { typeDefinitions } from './elements'

let names: string[] | undefined
let set: Set<string> | undefined

export function resourceTypes(): readonly string[] {
  if (!names) {
    names = [...typeDefinitions().values()]
      .filter((t) => t.kind === 'resource' && !t.abstract)
      .map((t) => t.name)
      .sort()
  }
  return names
}

export function isResourceType(name: string): boolean {
  if (!set) set = new Set(resourceTypes())
  return set.has(name)
}
