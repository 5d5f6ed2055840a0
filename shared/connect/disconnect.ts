// DELETE /patients/{id}/connections/{conn}: the organization revokes a connection. The status becomes
// `disconnected`, the tokens are forgotten, and with `removeRecords` the resources this source brought
// for the patient are deleted from the FHIR store (one transaction) and their id map dropped.
// ../shared/notes/patient-api.md §4.2, §7.3.
import type { Config } from '../config'
import type { Sql } from '../db/client'
import { processBundle } from '../fhir/bundle/process'
import type { Repo } from '../fhir/repo/repo'
import { notFound } from '../patients/api-error'
import { getConnection, setConnectionStatus } from '../patients/connections'
import { clearTokens } from './connection-tokens'

export interface DisconnectDeps {
  sql: Sql
  repo: Repo
  config: Config
  secret: string
}

export interface Disconnected {
  id: string
  resource_type: 'connection'
  disconnected: true
  records_removed: number
}

export async function disconnect(
  deps: DisconnectDeps,
  organizationId: string,
  patientId: string,
  connectionId: string,
  removeRecords: boolean,
): Promise<Disconnected> {
  const conn = await getConnection(deps.sql, organizationId, connectionId)
  if (conn.patient_id !== patientId) throw notFound('connection', connectionId, 'connection_id')
  await setConnectionStatus(deps.sql, connectionId, 'disconnected')
  await clearTokens(deps.sql, connectionId)
  let removed = 0
  if (removeRecords) {
    const rows = await deps.sql<{ res_type: string; our_id: string }[]>`
      select res_type, our_id from connect_resource_map
      where organization_id = ${organizationId} and patient_id = ${patientId} and fhir_source_id = ${conn.fhir_source_id}`
    if (rows.length > 0) {
      const ctx = { repo: deps.repo, config: deps.config, baseUrl: `${deps.config.publicBaseUrl ?? 'http://localhost'}/fhir`, secret: deps.secret }
      const entry = rows.map((r) => ({ request: { method: 'DELETE', url: `${r.res_type}/${r.our_id}` } }))
      await processBundle(ctx, { resourceType: 'Bundle', type: 'transaction', entry }, { maxEntries: Math.max(deps.config.maxBundleEntries, entry.length) })
      removed = rows.length
    }
    await deps.sql`
      delete from connect_resource_map
      where organization_id = ${organizationId} and patient_id = ${patientId} and fhir_source_id = ${conn.fhir_source_id}`
  }
  return { id: connectionId, resource_type: 'connection', disconnected: true, records_removed: removed }
}
