// Patient routes: POST /patients, GET /patients, GET|PUT|DELETE /patients/{id}.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { ListCursor, listQuery } from '../../shared/patients/list-page'
import { deletePatient } from '../../shared/patients/patient-deletion'
import { createPatient, getPatientDetail, listPatients, replacePatient } from '../../shared/patients/patients'
import { PatientBody, parseBody } from './models'
import { ok, orgApi } from './org-api'

export function patientRoutes(deps: AppDeps) {
  const api = orgApi(deps)
  const { sql } = deps
  return new Elysia({ name: 'patient-api-patients' })
    .post(
      '/patients',
      api.handle(async ({ principal, body }) => ok(await createPatient(sql, principal.organizationId, parseBody(PatientBody, body)))),
      { parse: 'none' },
    )
    .get(
      '/patients',
      api.handle(async ({ principal, url }) => {
        const q = url.searchParams
        const filters = { patient_id: q.get('patient_id') ?? undefined, email: q.get('email') ?? undefined }
        const cursor = ListCursor.of(deps.secret, principal.organizationId, 'patients', filters)
        return ok(await listPatients(sql, principal.organizationId, cursor, listQuery(q, cursor), filters))
      }),
    )
    .get(
      '/patients/:id',
      api.handle(async ({ principal, params }) => ok(await getPatientDetail(sql, principal.organizationId, params.id))),
    )
    .put(
      '/patients/:id',
      api.handle(async ({ principal, params, body }) => ok(await replacePatient(sql, principal.organizationId, params.id, parseBody(PatientBody, body)))),
      { parse: 'none' },
    )
    .delete(
      '/patients/:id',
      api.handle(async ({ principal, params }) => ok(await deletePatient(deps, principal.organizationId, params.id))),
    )
}
