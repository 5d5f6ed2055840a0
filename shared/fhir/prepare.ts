// Builds every definition-derived table at start-up (types, validation plans, required-binding codes and
// their systems), then releases the raw definition bundles so they do not weigh on the heap and on GC
// pauses.
import { releaseDefinitionBundles } from './definitions/load'
import { resourceTypes } from './definitions/resource-types'
import { releaseValueSetSources } from './definitions/value-set-codes'
import { prepareCodeSystems } from './search/types/code-systems'
import { prepareCompartments } from './search/query/compartment'
import { searchableTypes } from './search/registry'
import { prepareValidation } from './validate/validate'

export function prepareFhirDefinitions(): void {
  resourceTypes()
  prepareValidation()
  searchableTypes()
  prepareCompartments()
  prepareCodeSystems()
  releaseValueSetSources()
  releaseDefinitionBundles()
  Bun.gc(true)
}
