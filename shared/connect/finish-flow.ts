// The patient is done (Done button, or the source answered in direct mode): the flow becomes
// `complete`, `patient_flow.completed` (or `session.completed` for a record made by POST /sessions) is
// emitted with the full flow in that view, and the browser goes back to return_url. ../shared/notes/patient-api.md §4, §6.1.
import type { Config } from '../config'
import type { Sql } from '../db/client'
import type { Jobs } from '../jobs/queues'
import { type ConnectionRow, recordConnection } from '../patients/connections'
import type { ReturnErrorCode } from '../patients/error-codes'
import { completeFlow, type FlowPageUrl, type FlowRow, getFlow } from '../patients/flows'
import { emitEvent } from '../webhooks/events'

export interface FinishDeps {
  sql: Sql
  jobs: Jobs
  config: Config
}

/** Completes the flow and answers the return URL. `direct` carries the direct-mode outcome. */
export async function finishFlow(deps: FinishDeps, flow: FlowRow, pageUrl: FlowPageUrl, direct?: ConnectionRow): Promise<string> {
  const done = await completeFlow(deps.sql, flow.id)
  const view = await getFlow(deps.sql, done.organization_id, done.kind, done.id, pageUrl)
  await emitEvent({ sql: deps.sql, jobs: deps.jobs, retryDelaysMs: deps.config.webhookRetryDelaysMs }, done.organization_id, `${done.kind}.completed`, view)
  return returnUrl(done, direct)
}

/**
 * Direct mode could not send the patient to the source (its SMART endpoints did not answer, or it is
 * not set up for connections): the attempt is recorded as a failed connection with `code`, the flow
 * completes, and the patient goes back to return_url with success=false&error={code}, as a refusal
 * at the source would. ../shared/notes/patient-api.md §6.1 (Direct mode, failure).
 */
export async function failDirectFlow(deps: FinishDeps, flow: FlowRow, pageUrl: FlowPageUrl, code: ReturnErrorCode): Promise<string> {
  const connection = await recordConnection(deps.sql, {
    organizationId: flow.organization_id,
    patientId: flow.patient_id,
    fhirSourceId: flow.connection_id as string,
    flowId: flow.id,
    status: 'failed',
    failureCode: code,
  })
  return finishFlow(deps, flow, pageUrl, connection)
}

export function returnUrl(flow: FlowRow, direct?: ConnectionRow): string {
  const u = new URL(flow.return_url)
  u.searchParams.set('patient_id', flow.patient_id)
  u.searchParams.set(flow.kind === 'session' ? 'session_id' : 'patient_flow_id', flow.id)
  if (direct) {
    u.searchParams.set('success', direct.status === 'active' ? 'true' : 'false')
    if (direct.status === 'active') u.searchParams.set('connection_id', direct.fhir_source_id)
    else u.searchParams.set('error', direct.failure_code ?? 'oauth_callback_failed')
  }
  return u.toString()
}
