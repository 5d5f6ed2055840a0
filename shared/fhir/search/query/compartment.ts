// Compartment search, GET /Patient/{id}/{type}: resources of `type` that reference the patient through
// one of the parameters the Patient CompartmentDefinition names for that type.
// https://hl7.org/fhir/R4/compartmentdefinition-patient.html
import { AppError } from '../../../errors'
import { loadDefinitionBundle } from '../../definitions/load'
import type { Criterion } from './query'
import { searchParamFor } from '../registry'

let patientParams: Map<string, string[]> | undefined

function compartmentParams(): Map<string, string[]> {
  if (!patientParams) {
    const def = loadDefinitionBundle('compartmentdefinition-patient.json') as any
    const cd = def.resourceType === 'CompartmentDefinition' ? def : def.entry?.[0]?.resource
    patientParams = new Map((cd.resource as any[]).map((r) => [r.code, r.param ?? []]))
  }
  return patientParams
}

/** The criterion "in the compartment of {compartment}/{id}" for resources of `type`. */
export function compartmentCriterion(compartment: string, id: string, type: string): Criterion {
  if (compartment !== 'Patient') throw new AppError('invalid', `Compartment ${compartment} is not supported; only the Patient compartment is`)
  const codes = compartmentParams().get(type) ?? []
  if (type === 'Patient') return { kind: 'param', def: searchParamFor('Patient', '_id')!, values: [id] }
  if (codes.length === 0) throw new AppError('invalid', `Resource type ${type} is not part of the Patient compartment`)
  return { kind: 'compartment', compartmentType: 'Patient', id, codes }
}

/** The resource types that can be in a Patient's compartment (Patient itself excluded). */
export function patientCompartmentTypes(): string[] {
  return [...compartmentParams()].filter(([type, params]) => type !== 'Patient' && params.length > 0).map(([type]) => type)
}

/** Every resource type of the Patient compartment with the parameters linking it to the patient ($everything). */
export function patientCompartmentParams(): ReadonlyMap<string, readonly string[]> {
  return compartmentParams()
}

let links: { types: string[]; codes: string[] } | undefined

/** The (type, parameter) pairs linking a resource to its patient, as two parallel arrays for unnest(). */
export function patientCompartmentLinks(): { types: string[]; codes: string[] } {
  if (!links) {
    const types: string[] = []
    const codes: string[] = []
    for (const [type, params] of compartmentParams()) {
      for (const code of params) {
        types.push(type)
        codes.push(code)
      }
    }
    links = { types, codes }
  }
  return links
}

/** Forces the table to be built at start-up (before definition bundles are released). */
export function prepareCompartments(): void {
  compartmentParams()
}
