// The export-cache job: builds the snapshot of a large export (more compartment index rows than
// EXPORT_INLINE_MAX) on a worker and stores it in the page cache; the API node that asked waits for
// it, then serves pages from the cache like any other. Small exports are snapshotted inline.
import { Type } from '@sinclair/typebox'
import type { Sql } from '../db/client'
import { defineJob, type PayloadOf } from '../jobs/definition'
import { snapshotId } from './cursor'
import { snapshotList } from './everything-query'
import type { ExportCache } from './page-cache'

const Selector = Type.Union([
  Type.Object({ kind: Type.Literal('ids'), ids: Type.Array(Type.String()) }),
  Type.Object({ kind: Type.Literal('identifier'), system: Type.String(), value: Type.String() }),
  Type.Object({ kind: Type.Literal('all') }),
])

export const ExportCacheJob = defineJob(
  'export-cache',
  Type.Object({
    scope: Type.String(),
    params: Type.String(),
    selector: Selector,
    filter: Type.Object({
      types: Type.Optional(Type.Array(Type.String())),
      since: Type.Optional(Type.String()),
      after: Type.Optional(Type.String()),
      lastUpdated: Type.Optional(Type.Array(Type.String())),
      followReferences: Type.Boolean(),
      markIncluded: Type.Optional(Type.Boolean()),
    }),
  }),
  // Rebuilding is harmless (a snapshot is written whole, under an id derived from its content).
  { attempts: 2, backoff: { type: 'fixed', delay: 500 }, removeOnComplete: { age: 3600 }, removeOnFail: { age: 24 * 3600 } },
)

export interface ExportCacheResult {
  sid: string
  patients: number
  total: number
}

/** The processor: one statement (one consistent snapshot), then one write to the cache. */
export async function buildExportCache(sql: Sql, cache: ExportCache, data: PayloadOf<typeof ExportCacheJob>): Promise<ExportCacheResult> {
  const snap = await snapshotList(sql, data.selector, data.filter)
  const sid = snapshotId(data.scope, data.params, snap.list)
  await cache.putSnapshot(sid, snap.list)
  return { sid, patients: snap.patients, total: snap.total }
}
