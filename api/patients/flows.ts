// Patient flow and session routes: POST /patient-flows, GET /patient-flows/{id},
// GET /patients/{id}/patient-flows, POST /sessions (an alias of POST /patient-flows that names the
// record a session), GET /sessions/{id}, GET /patients/{id}/sessions. Both retrieve endpoints take
// either id of a record (pf_X or sess_X) and render it in their own view.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { invalidData } from '../../shared/patients/api-error'
import { createFlow, FLOW_STATUSES, type FlowKind, type FlowStatus, getFlow, listFlows } from '../../shared/patients/flows'
import { ListCursor, listQuery } from '../../shared/patients/list-page'
import { FlowBody, parseBody } from './models'
import { type OrgHandler, ok, orgApi } from './org-api'

export function flowRoutes(deps: AppDeps) {
  const api = orgApi(deps)
  const { sql } = deps
  const create =
    (kind: FlowKind): OrgHandler =>
    async ({ principal, body, flowPageUrl }) =>
      ok(await createFlow(sql, principal.organizationId, kind, parseBody(FlowBody, body), flowPageUrl))
  const retrieve =
    (as: FlowKind): OrgHandler =>
    async ({ principal, params, flowPageUrl }) =>
      ok(await getFlow(sql, principal.organizationId, as, params.id, flowPageUrl))
  const list =
    (kind: FlowKind): OrgHandler =>
    async ({ principal, params, url, flowPageUrl }) => {
      const status = statusFilter(url.searchParams.get('status'))
      const cursor = ListCursor.of(deps.secret, principal.organizationId, `${kind}s`, { patient: params.id, status })
      const q = listQuery(url.searchParams, cursor)
      return ok(await listFlows(sql, principal.organizationId, params.id, kind, cursor, q, status, flowPageUrl))
    }
  return new Elysia({ name: 'patient-api-flows' })
    .post('/patient-flows', api.handle(create('patient_flow')), { parse: 'none' })
    .post('/sessions', api.handle(create('session')), { parse: 'none' })
    .get('/patient-flows/:id', api.handle(retrieve('patient_flow')))
    .get('/sessions/:id', api.handle(retrieve('session')))
    .get('/patients/:id/patient-flows', api.handle(list('patient_flow')))
    .get('/patients/:id/sessions', api.handle(list('session')))
}

function statusFilter(s: string | null): FlowStatus | undefined {
  if (s === null || s === '') return undefined
  if (!(FLOW_STATUSES as readonly string[]).includes(s)) throw invalidData('status', `status must be one of ${FLOW_STATUSES.join(', ')}`)
  return s as FlowStatus
}
