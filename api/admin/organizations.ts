// Operator endpoints (admin scope of the FHIR server's own API keys, table api_key): organizations, their
// API keys (the secret is in the creation answer only), and the FHIR source catalog with its SMART
// client credentials (write-only). Errors use the patient API's envelope.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { createFhirSource, deleteFhirSource, getFhirSource, listFhirSources, updateFhirSource } from '../../shared/patients/fhir-sources'
import { ListCursor, listQuery } from '../../shared/patients/list-page'
import { createOrgApiKey, listOrgApiKeys, revokeOrgApiKey } from '../../shared/patients/org-api-keys'
import { createOrganization, getOrganization, listOrganizations } from '../../shared/patients/organizations'
import { authenticate, authorize } from '../http/auth'
import { requestIdOf } from '../http/request-id'
import { ApiKeyBody, FhirSourceBody, FhirSourcePatch, OrganizationBody, parseBody } from '../patients/models'
import { errorResponse, parseJson, respond } from '../patients/org-api'

interface AdminCall {
  params: Record<string, string>
  body: unknown
  url: URL
}

export function organizationAdminRoutes(deps: AppDeps) {
  const { sql } = deps
  const admin =
    (fn: (call: AdminCall) => Promise<unknown>) =>
    async ({ request, params }: { request: Request; params?: Record<string, string> }) => {
      const requestId = requestIdOf(request)
      try {
        if (!deps.config.authDisabled) authorize(await authenticate(deps.verifier, request.headers.get('authorization')), 'admin')
        const body = request.method === 'GET' || request.method === 'DELETE' ? undefined : parseJson(await request.text())
        const result = await fn({ params: params ?? {}, body, url: new URL(request.url) })
        return respond({ status: 200, body: JSON.stringify(result) }, requestId)
      } catch (err) {
        return errorResponse(err, requestId, deps.publicBase())
      }
    }
  const all = <T>(data: T[]) => ({ resource_type: 'list', data, has_more: false, next_cursor: null })
  return new Elysia({ name: 'admin-organizations' })
    .post(
      '/admin/organizations',
      admin(async ({ body }) => createOrganization(sql, parseBody(OrganizationBody, body).name)),
      { parse: 'none' },
    )
    .get(
      '/admin/organizations',
      admin(async () => all(await listOrganizations(sql))),
    )
    .get(
      '/admin/organizations/:id',
      admin(async ({ params }) => getOrganization(sql, params.id)),
    )
    .post(
      '/admin/organizations/:id/api-keys',
      admin(async ({ params, body }) => createOrgApiKey(sql, params.id, parseBody(ApiKeyBody, body))),
      { parse: 'none' },
    )
    .get(
      '/admin/organizations/:id/api-keys',
      admin(async ({ params }) => all(await listOrgApiKeys(sql, params.id))),
    )
    .delete(
      '/admin/organizations/:id/api-keys/:keyId',
      admin(async ({ params }) => revokeOrgApiKey(sql, params.id, params.keyId)),
    )
    .post(
      '/admin/fhir-sources',
      admin(async ({ body }) => createFhirSource(deps, parseBody(FhirSourceBody, body))),
      { parse: 'none' },
    )
    .get(
      '/admin/fhir-sources',
      admin(async ({ url }) => {
        const filters = { q: url.searchParams.get('q') || undefined, type: url.searchParams.get('type') || undefined }
        const cursor = ListCursor.of(deps.secret, 'admin', 'fhir-sources', filters)
        return listFhirSources(sql, cursor, listQuery(url.searchParams, cursor), filters)
      }),
    )
    .get(
      '/admin/fhir-sources/:id',
      admin(async ({ params }) => getFhirSource(sql, params.id)),
    )
    .patch(
      '/admin/fhir-sources/:id',
      admin(async ({ params, body }) => updateFhirSource(deps, params.id, parseBody(FhirSourcePatch, body))),
      { parse: 'none' },
    )
    .delete(
      '/admin/fhir-sources/:id',
      admin(async ({ params }) => {
        await deleteFhirSource(sql, params.id)
        return { id: params.id, resource_type: 'fhir_source', deleted: true }
      }),
    )
}
