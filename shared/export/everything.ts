// "A patient's everything", paged through the export page cache: the one implementation behind the
// FHIR server's Patient/$everything and the patient API's export. The first page snapshots the
// ordered (rid, version) list of the whole result (inline in the same statement as the page when the
// compartment is small, on an export-cache worker when it is large); every page then reads exactly
// the versions of its slice of the snapshot, so pages neither repeat, skip nor change while records
// change underneath. Cursors are positions in the snapshot, valid 7 days, servable by any node.
import type { Sql } from '../db/client'
import { AppError } from '../errors'
import type { Jobs } from '../jobs/queues'
import type { Redis } from '../redis'
import { cursorOf, snapshotId } from './cursor'
import { type EverythingFilter, type PageResource, type PatientSelector, decodeEntries, inlineSnapshot, readVersions } from './everything-query'
import { buildExportCache, ExportCacheJob, type ExportCacheResult } from './export-cache-job'
import { type CursorValue, type ExportCache, redisExportCache } from './page-cache'
import { pgExportCache } from './page-cache-pg'

export interface EverythingDeps {
  sql: Sql
  cache: ExportCache
  /** Where large snapshots are built; absent: built inline. */
  jobs?: Jobs
  /** Compartments with more index rows than this are snapshotted by the export-cache job. */
  inlineMax: number
}

/** The page cache of this deployment: Redis when there is one, else PostgreSQL. */
export function exportCache(sql: Sql, redis: Redis | undefined, prefix: string): ExportCache {
  return redis ? redisExportCache(redis, prefix) : pgExportCache(sql)
}

export interface ExportQuery {
  selector: PatientSelector
  filter: EverythingFilter
  /** Who may page the result (a cursor of another scope is unknown here). */
  scope: string
  /** The filters as query parameters, repeated in the links. */
  params: string
}

export interface ExportPage {
  total: number
  /** Position of the page's first resource in the snapshot. */
  start: number
  resources: PageResource[]
  /** Cursor of the position after the page, when more follow. */
  next?: string
  /** Cursor of the position where the page starts, when resources precede it. */
  previous?: string
  params: string
}

/** How long a request waits for a worker to build a large snapshot. */
const BUILD_WAIT_MS = 120_000

/** The first page of a new export; undefined when the selector found no patient. */
export async function firstExportPage(deps: EverythingDeps, q: ExportQuery, count: number): Promise<ExportPage | undefined> {
  const snap = await inlineSnapshot(deps.sql, q.selector, q.filter, count, deps.inlineMax)
  if (snap.patients === 0) return undefined
  if (snap.inline) {
    const sid = snapshotId(q.scope, q.params, snap.list)
    const s = { sid, scope: q.scope, total: snap.total, params: q.params }
    // Both at once: a cursor's write also sets the snapshot's expiry, and the snapshot's write sets its own.
    const [, links] = await Promise.all([deps.cache.putSnapshot(sid, snap.list), issueCursors(deps, s, 0, snap.first.length)])
    return { total: s.total, start: 0, resources: snap.first, params: s.params, ...links }
  }
  const built = await buildSnapshot(deps, q)
  if (built.patients === 0) return undefined
  return pageAt(deps, { sid: built.sid, scope: q.scope, total: built.total, params: q.params }, 0, count)
}

/**
 * A page next to a cursor: after it (`starting_after`) or before it (`ending_before`); with no `dir`,
 * the side it was issued for (FHIR paging links carry only the cursor). Undefined when the cursor is
 * unknown, expired or of another scope.
 */
export async function cursorExportPage(
  deps: EverythingDeps,
  cursor: string,
  side: 'after' | 'before' | undefined,
  count: number,
  scope: string,
): Promise<ExportPage | undefined> {
  const c = await deps.cache.cursor(cursor)
  if (!c || c.scope !== scope) return undefined
  const dir = side ?? c.dir
  const start = dir === 'after' ? c.pos : Math.max(0, c.pos - count)
  const end = dir === 'after' ? Math.min(c.total, c.pos + count) : c.pos
  return pageAt(deps, c, start, end - start)
}

type Snapshot = Omit<CursorValue, 'pos' | 'dir'>

async function pageAt(deps: EverythingDeps, s: Snapshot, start: number, count: number): Promise<ExportPage> {
  const packed = await deps.cache.entries(s.sid, start, start + count)
  if (packed.length === 0 && count > 0 && start < s.total) throw new AppError('gone', 'The export has expired; start it again without a cursor')
  const [resources, links] = await Promise.all([readVersions(deps.sql, decodeEntries(packed)), issueCursors(deps, s, start, count)])
  return { total: s.total, start, resources, params: s.params, ...links }
}

/** The cursors of the positions after and before the page [start, start + count), stored. */
async function issueCursors(deps: EverythingDeps, s: Snapshot, start: number, count: number): Promise<Pick<ExportPage, 'next' | 'previous'>> {
  const end = start + count
  const links: Pick<ExportPage, 'next' | 'previous'> = {}
  const issued: Array<[string, CursorValue]> = []
  const value = (pos: number, dir: CursorValue['dir']): CursorValue => ({ sid: s.sid, scope: s.scope, total: s.total, params: s.params, pos, dir })
  if (end < s.total && count > 0) issued.push([(links.next = cursorOf(s.sid, end, 'after')), value(end, 'after')])
  if (start > 0) issued.push([(links.previous = cursorOf(s.sid, start, 'before')), value(start, 'before')])
  if (issued.length > 0) await deps.cache.issue(s.sid, issued)
  return links
}

async function buildSnapshot(deps: EverythingDeps, q: ExportQuery): Promise<ExportCacheResult> {
  const data = { scope: q.scope, params: q.params, selector: q.selector, filter: q.filter }
  if (!deps.jobs) return buildExportCache(deps.sql, deps.cache, data)
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AppError('busy', 'The export is still being prepared; try again shortly')), BUILD_WAIT_MS)
  })
  try {
    return (await Promise.race([deps.jobs.run(ExportCacheJob, data), timeout])) as ExportCacheResult
  } finally {
    clearTimeout(timer)
  }
}
