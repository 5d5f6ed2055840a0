// $validate at type and instance level: the OperationOutcome of the same validation a write runs,
// without storing anything. https://hl7.org/fhir/R4/resource-operation-validate.html
import { AppError } from '../../errors'
import type { FhirRequest, FhirResponse } from '../request'
import { validateResource } from '../validate/validate'
import type { OperationDef } from './types'

export async function validateOperation(req: FhirRequest, type: string, id?: string): Promise<FhirResponse> {
  const body = req.body as any
  // Either the resource itself, or a Parameters with a `resource` parameter.
  const resource =
    body && typeof body === 'object' && body.resourceType === 'Parameters' && type !== 'Parameters'
      ? body.parameter?.find((p: any) => p.name === 'resource')?.resource
      : body
  if (!resource || typeof resource !== 'object')
    throw new AppError('invalid', 'HAPI-0447: No resource supplied for $validate operation (resource is required unless mode is "delete")')
  const issues = validateResource(resource, { expectedType: type })
  if (id !== undefined && resource.id !== undefined && resource.id !== id)
    issues.push({
      severity: 'error',
      code: 'invalid',
      diagnostics: `Resource id "${resource.id}" does not match the URL id "${id}"`,
      expression: [`${type}.id`],
    })
  const failed = issues.some((i) => i.severity === 'error' || i.severity === 'fatal')
  const outcome = {
    resourceType: 'OperationOutcome',
    issue:
      issues.length > 0
        ? issues.map((i) => ({ severity: i.severity, code: i.code, diagnostics: i.diagnostics, ...(i.expression ? { expression: i.expression } : {}) }))
        : [{ severity: 'information', code: 'informational', diagnostics: 'No issues detected during validation' }],
  }
  // HAPI answers 412 when validation fails, 200 otherwise, both with the outcome.
  return { status: failed ? 412 : 200, resource: outcome }
}

export const operations: OperationDef[] = [
  {
    name: '$validate',
    levels: ['type', 'instance'],
    methods: ['GET', 'POST'],
    scope: 'read',
    handler: (req, _ctx, t) => validateOperation(req, t.type as string, t.id),
  },
]
