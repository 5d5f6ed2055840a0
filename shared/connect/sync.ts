// The background pull of one connection: read its tokens, pull the patient's records from the source
// (refreshing the access token as needed), store them under our ids, and record the outcome on the
// connection (sync_status, last_synced_at, sync_total, sync_error) and as a webhook event. A refresh
// that fails sets the connection `refresh_failed` and emits connection.token_refresh_failed.
// ../shared/notes/patient-api.md §4.2, §6.2.
import type { Config } from '../config'
import type { Sql } from '../db/client'
import type { Repo } from '../fhir/repo/repo'
import type { Jobs } from '../jobs/queues'
import { log } from '../log'
import type { Outbound } from '../net/client'
import { type ConnectionRow, patientConnectionView, setConnectionStatus } from '../patients/connections'
import { sourceCredentials } from '../patients/fhir-sources'
import type { SecretCipher } from '../secrets/cipher'
import { emitEvent } from '../webhooks/events'
import { readTokens, saveTokens } from './connection-tokens'
import { storeRecords } from './record-store'
import { RefreshFailedError, SourceSession } from './source-session'
import { pullPatientRecords } from './source-pull'

export interface SyncDeps {
  sql: Sql
  repo: Repo
  config: Config
  secret: string
  jobs: Jobs
  cipher: SecretCipher
  outbound: Outbound
}

export interface SyncSummary {
  connectionId: string
  outcome: 'succeeded' | 'failed' | 'refresh_failed' | 'skipped'
  total?: number
  created?: number
  updated?: number
  unchanged?: number
  deleted?: number
  durationMs: number
  error?: string
}

type SyncRow = ConnectionRow & {
  access_token: string | null
  refresh_token: string | null
  token_expires_at: Date | null
  token_endpoint: string | null
  source_patient_id: string | null
}

export async function syncConnection(deps: SyncDeps, connectionId: string): Promise<SyncSummary> {
  const started = Date.now()
  const [row] = await deps.sql<SyncRow[]>`select * from connection where id = ${connectionId}`
  if (!row || row.status !== 'active') return { connectionId, outcome: 'skipped', durationMs: 0 }
  const { cipher } = deps
  const events = { sql: deps.sql, jobs: deps.jobs, retryDelaysMs: deps.config.webhookRetryDelaysMs }
  await deps.sql`update connection set sync_status = 'running', sync_started_at = now() where id = ${connectionId}`
  const failed = async (message: string): Promise<SyncSummary> => {
    const durationMs = Date.now() - started
    await deps.sql`update connection set sync_status = 'failed', sync_error = ${message.slice(0, 2000)} where id = ${connectionId}`
    await emitEvent(events, row.organization_id, 'records.sync.failed', {
      id: row.id,
      resource_type: 'connection',
      patient_id: row.patient_id,
      connection_id: row.fhir_source_id,
      error_message: message,
    })
    return { connectionId, outcome: 'failed', durationMs, error: message }
  }
  try {
    const stored = readTokens(cipher, row)
    const source = await sourceCredentials(deps.sql, cipher, row.fhir_source_id)
    if (!stored?.tokens.patient) return await failed('the connection has no access token or patient context')
    const session = new SourceSession({
      baseUrl: source.fhirBaseUrl,
      outbound: deps.outbound,
      tokens: stored.tokens,
      client:
        stored.tokenEndpoint && source.clientId
          ? { tokenEndpoint: stored.tokenEndpoint, clientId: source.clientId, clientSecret: source.clientSecret }
          : undefined,
      onRefresh: (t) => saveTokens(deps.sql, cipher, connectionId, t),
    })
    const pulled = await pullPatientRecords(session, stored.tokens.patient, {
      maxPages: deps.config.connectSyncMaxPages,
      maxResources: deps.config.connectSyncMaxResources,
    })
    const ctx = { repo: deps.repo, config: deps.config, baseUrl: `${deps.config.publicBaseUrl ?? 'http://localhost'}/fhir`, secret: deps.secret }
    const result = await storeRecords(
      ctx,
      deps.sql,
      {
        organizationId: row.organization_id,
        patientId: row.patient_id,
        fhirSourceId: row.fhir_source_id,
        fhirBaseUrl: source.fhirBaseUrl,
        sourcePatientId: stored.tokens.patient,
      },
      pulled.resources,
    )
    const durationMs = Date.now() - started
    await deps.sql`
      update connection set sync_status = 'succeeded', last_synced_at = now(), sync_total = ${result.total}, sync_error = null,
        sync_created = ${result.created}, sync_updated = ${result.updated}, sync_deleted = ${result.deleted}, sync_unchanged = ${result.unchanged}
      where id = ${connectionId}`
    await emitEvent(events, row.organization_id, 'records.sync.completed', {
      id: row.id,
      resource_type: 'connection',
      patient_id: row.patient_id,
      connection_id: row.fhir_source_id,
      total: result.total,
      errors: 0,
      duration_ms: durationMs,
      // What the pull changed here, as GET /patients/{id}/connections/{conn} shows it (sync.changes).
      changes: { created: result.created, updated: result.updated, deleted: result.deleted, unchanged: result.unchanged },
    })
    log.info('connection synced', { connection: connectionId, via: pulled.via, requests: pulled.requests, ...result, durationMs })
    return {
      connectionId,
      outcome: 'succeeded',
      total: result.total,
      created: result.created,
      updated: result.updated,
      unchanged: result.unchanged,
      deleted: result.deleted,
      durationMs,
    }
  } catch (err) {
    if (err instanceof RefreshFailedError) {
      // The sync's error first: whoever sees refresh_failed also sees why.
      await deps.sql`update connection set sync_status = 'failed', sync_error = ${`token refresh failed: ${err.message}`} where id = ${connectionId}`
      const updated = await setConnectionStatus(deps.sql, connectionId, 'refresh_failed')
      await emitEvent(events, row.organization_id, 'connection.token_refresh_failed', patientConnectionView(updated))
      return { connectionId, outcome: 'refresh_failed', durationMs: Date.now() - started, error: err.message }
    }
    log.warn('connection sync failed', { connection: connectionId, err: String((err as Error).message).slice(0, 500) })
    return await failed((err as Error).message)
  }
}

/** Active connections whose last pull is older than `olderThanMs` (or never finished), not running now. */
export async function connectionsDue(sql: Sql, olderThanMs: number, limit = 500): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from connection
    where status = 'active' and access_token is not null
      and (last_synced_at is null or last_synced_at < now() - make_interval(secs => ${olderThanMs / 1000}))
      and (sync_status is distinct from 'running' or sync_started_at < now() - interval '1 hour')
    order by last_synced_at nulls first limit ${limit}`
  return rows.map((r) => r.id)
}
