// A patient's connection as the organization manages it: GET with the state of its background pull
// (and what the last one changed: created, updated, deleted, unchanged),
// POST .../sync to pull again now, and DELETE /patients/{id}/connections/{conn} (disconnect; `?delete_records=true` also removes the
// records that source brought). ../shared/notes/patient-api.md §4.2, §7.3.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { disconnect } from '../../shared/connect/disconnect'
import { ConnectSyncJob } from '../../shared/connect/jobs'
import { apiError } from '../../shared/patients/api-error'
import { invalidData, notFound } from '../../shared/patients/api-error'
import { getConnection, patientConnectionView } from '../../shared/patients/connections'
import { ok, orgApi } from '../patients/org-api'

interface SyncColumns {
  sync_status: string | null
  sync_started_at: Date | null
  last_synced_at: Date | null
  sync_total: number | null
  sync_error: string | null
  sync_created: number | null
  sync_updated: number | null
  sync_deleted: number | null
  sync_unchanged: number | null
}

export function connectionRoutes(deps: AppDeps) {
  const api = orgApi(deps)
  const { sql } = deps
  return new Elysia({ name: 'connect-connections' })
    .get(
      '/patients/:id/connections/:conn',
      api.handle(async ({ principal, params }) => {
        const c = await getConnection(sql, principal.organizationId, params.conn)
        if (c.patient_id !== params.id) throw notFound('connection', params.conn, 'conn')
        const [s] = await sql<SyncColumns[]>`
          select sync_status, sync_started_at, last_synced_at, sync_total, sync_error, sync_created, sync_updated, sync_deleted, sync_unchanged
          from connection where id = ${c.id}`
        return ok({
          ...patientConnectionView(c),
          sync: {
            status: s.sync_status,
            started_at: s.sync_started_at?.toISOString() ?? null,
            last_synced_at: s.last_synced_at?.toISOString() ?? null,
            total: s.sync_total,
            error: s.sync_error,
            // What the last completed pull changed here (null before one completes).
            changes:
              s.sync_created === null ? null : { created: s.sync_created, updated: s.sync_updated, deleted: s.sync_deleted, unchanged: s.sync_unchanged },
          },
        })
      }),
    )
    .post(
      '/patients/:id/connections/:conn/sync',
      api.handle(async ({ principal, params }) => {
        const c = await getConnection(sql, principal.organizationId, params.conn)
        if (c.patient_id !== params.id) throw notFound('connection', params.conn, 'conn')
        if (c.status !== 'active') throw apiError('conflict', 'resource_conflict', `Connection ${c.id} is ${c.status}; only an active connection can sync`)
        await sql`update connection set sync_status = 'queued' where id = ${c.id}`
        await deps.jobs.enqueue(ConnectSyncJob, { connectionId: c.id })
        return ok({ id: c.id, resource_type: 'connection', sync: { status: 'queued' } }, 202)
      }),
      { parse: 'none' },
    )
    .delete(
      '/patients/:id/connections/:conn',
      api.handle(async ({ principal, params, url }) => {
        const flag = url.searchParams.get('delete_records')
        if (flag !== null && flag !== 'true' && flag !== 'false') throw invalidData('delete_records', 'delete_records must be true or false')
        return ok(await disconnect(deps, principal.organizationId, params.id, params.conn, flag === 'true'))
      }),
    )
}
