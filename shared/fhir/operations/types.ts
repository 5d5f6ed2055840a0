// The shape of a FHIR operation ($name): where it may be invoked, with which methods and scope, and
// the handler that serves it. Each operation module exports its definitions; operations/index.ts
// lists the modules, and the router dispatches by name and level.
// https://hl7.org/fhir/R4/operations.html
import type { Scope } from '../../auth/api-keys'
import type { FhirRequest, FhirResponse, FhirServices } from '../request'
import type { OperationInput } from './params'

export type OperationLevel = 'system' | 'type' | 'instance' | 'version'

export interface OperationTarget {
  level: OperationLevel
  type?: string
  id?: string
  version?: string
}

export interface OperationDef {
  /** With the dollar sign, e.g. `$expunge`. */
  name: string
  levels: OperationLevel[]
  /** GET is allowed only for operations that do not change state. */
  methods: Array<'GET' | 'POST'>
  scope: Scope
  /** Resource types it applies to at type, instance and version level; absent means every type. */
  types?: string[]
  handler(req: FhirRequest, ctx: FhirServices, target: OperationTarget, input: OperationInput): Promise<FhirResponse>
}
