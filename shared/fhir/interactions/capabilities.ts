// capabilities: GET /metadata, a CapabilityStatement of what this server does, built once per process.
// https://hl7.org/fhir/R4/http.html#capabilities
import { resourceTypes } from '../definitions/resource-types'
import type { FhirContext, FhirResponse } from '../request'

const TYPE_INTERACTIONS = ['read', 'vread', 'update', 'patch', 'delete', 'history-instance', 'history-type', 'create']

let cached: { key: string; statement: any } | undefined

export function capabilities(ctx: FhirContext): FhirResponse {
  if (cached?.key !== ctx.baseUrl) cached = { key: ctx.baseUrl, statement: build(ctx) }
  return { status: 200, resource: cached.statement }
}

function build(ctx: FhirContext): any {
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: new Date().toISOString(),
    publisher: 'fhir-platform',
    kind: 'instance',
    software: { name: 'fhir-platform', version: '0.1.0' },
    implementation: { description: 'FHIR R4 resource server', url: ctx.baseUrl },
    fhirVersion: '4.0.1',
    format: ['application/fhir+json', 'application/fhir+xml'],
    patchFormat: ['application/fhir+json', 'application/fhir+xml', 'application/json-patch+json'],
    rest: [
      {
        mode: 'server',
        security: {
          description: 'Every request carries `Authorization: Bearer <API key>`; keys have read, write and admin scopes.',
        },
        resource: resourceTypes().map((type) => ({
          type,
          profile: `http://hl7.org/fhir/StructureDefinition/${type}`,
          interaction: TYPE_INTERACTIONS.map((code) => ({ code })),
          versioning: 'versioned-update',
          readHistory: true,
          updateCreate: true,
          conditionalCreate: false,
          conditionalUpdate: false,
          conditionalDelete: 'not-supported',
          operation: [{ name: 'validate', definition: 'http://hl7.org/fhir/OperationDefinition/Resource-validate' }],
        })),
        interaction: [{ code: 'history-system' }],
      },
    ],
  }
}
