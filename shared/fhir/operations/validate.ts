// $validate at type and instance level: the OperationOutcome of the same validation a write runs,
// without storing anything. https://hl7.org/fhir/R4/resource-operation-validate.html
// HAPI 7.0 (BaseHapiFhirResourceDao.validate): 200 whatever the outcome (412 until 6.6, changelog
// 6_6_0/upgrade.md); at instance level with no resource in the body, the stored current version is
// validated (HAPI's own smoke test POSTs Patient/{id}/$validate with no body); with neither, HAPI-0992.
import { AppError } from '../../errors'
import { parseFhirJson } from '../format/json'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { liveVersion } from '../resource-errors'
import { validateResource } from '../validate/validate'
import type { OperationDef } from './types'

export async function validateOperation(req: FhirRequest, ctx: Pick<FhirContext, 'repo'>, type: string, id?: string): Promise<FhirResponse> {
  const body = req.body as any
  // Either the resource itself, or a Parameters with a `resource` parameter.
  const supplied =
    body && typeof body === 'object' && body.resourceType === 'Parameters' && type !== 'Parameters'
      ? body.parameter?.find((p: any) => p.name === 'resource')?.resource
      : body
  let resource = supplied && typeof supplied === 'object' ? supplied : undefined
  if (!resource && id !== undefined) resource = parseFhirJson(liveVersion(await ctx.repo.read(type, id), type, id).content as string)
  if (!resource) throw new AppError('invalid', 'HAPI-0992: No resource supplied for $validate operation (resource is required unless mode is "delete")')
  const issues = validateResource(resource, { expectedType: type })
  if (id !== undefined && resource.id !== undefined && resource.id !== id)
    issues.push({
      severity: 'error',
      code: 'invalid',
      diagnostics: `Resource id "${resource.id}" does not match the URL id "${id}"`,
      expression: [`${type}.id`],
    })
  const outcome = {
    resourceType: 'OperationOutcome',
    issue:
      issues.length > 0
        ? issues.map((i) => ({ severity: i.severity, code: i.code, diagnostics: i.diagnostics, ...(i.expression ? { expression: i.expression } : {}) }))
        : [{ severity: 'information', code: 'informational', diagnostics: 'No issues detected during validation' }],
  }
  return { status: 200, resource: outcome }
}

export const operations: OperationDef[] = [
  {
    name: '$validate',
    levels: ['type', 'instance'],
    methods: ['GET', 'POST'],
    scope: 'read',
    handler: (req, ctx, t) => validateOperation(req, ctx, t.type as string, t.id),
  },
]
