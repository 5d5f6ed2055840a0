// GET /patients/{id}/$everything: the organization's patient is resolved here (404 resource_not_found),
// the Bundle page comes from the export core (shared/export/patient-export.ts). GET
// /patients/{id}/fhir/{type}/{id}: one resource of that export, what each entry's fullUrl points at.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { exportPatientPage } from '../../shared/export/patient-export'
import { readExportedRecord } from '../../shared/export/patient-record'
import { notFound } from '../../shared/patients/api-error'
import { getPatient } from '../../shared/patients/patients'
import { ok, orgApi } from './org-api'

export function exportRoutes(deps: AppDeps) {
  const api = orgApi(deps)
  return new Elysia({ name: 'patient-api-export' })
    .get(
      '/patients/:id/$everything',
      api.handle(async ({ principal, params, url, publicBaseUrl }) => {
        await getPatient(deps.sql, principal.organizationId, params.id)
        const selfUrl = `${publicBaseUrl}/patients/${encodeURIComponent(params.id)}/$everything`
        const page = await exportPatientPage(
          { repo: deps.repo, redis: deps.redis, jobs: deps.jobs, config: deps.config },
          { organizationId: principal.organizationId, patientId: params.id, query: url.searchParams, selfUrl },
        )
        return ok(page)
      }),
    )
    .get(
      '/patients/:id/fhir/:type/:resourceId',
      api.handle(async ({ principal, params }) => {
        await getPatient(deps.sql, principal.organizationId, params.id)
        const content = await readExportedRecord(deps.sql, principal.organizationId, params.id, params.type, params.resourceId)
        if (content === undefined) throw notFound(`record of patient ${params.id}`, `${params.type}/${params.resourceId}`, 'id')
        return { status: 200, body: JSON.parse(content), headers: { 'content-type': 'application/fhir+json; charset=utf-8' } }
      }),
    )
}
