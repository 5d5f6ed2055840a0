// The export page cache: snapshots (the ordered, packed (rid, version) list of an export) and cursors
// (a position in a snapshot), both expiring 7 days after the last cursor issued into them. Kept in
// Redis, shared by every API node and worker; without Redis (embedded form) in PostgreSQL
// (page-cache-pg.ts), so that cursors survive a restart there too. Snapshot ids and cursors are
// derived from their content (snapshot-id.ts): an export repeated over unchanged data, or a page read
// twice, reuses its entries instead of adding new ones, so the cache grows with distinct data only.
import type { Redis } from '../redis'
import { CURSOR_TTL_SECONDS } from './cursor'
import { ENTRY_WIDTH } from './everything-query'

/** What a cursor names: a position (entries before it) in a snapshot, and the export it belongs to. */
export interface CursorValue {
  sid: string
  pos: number
  /** Who may page it: the surface and the export it answers (e.g. `fhir Patient/1/$everything`). */
  scope: string
  total: number
  /** The filters of the export as query parameters, repeated in the links. */
  params: string
  /** Whether the cursor was issued for the page after it (next) or before it (previous). */
  dir: 'after' | 'before'
}

export interface ExportCache {
  /** Stores (or refreshes) a snapshot: its packed entries. */
  putSnapshot(sid: string, list: string): Promise<void>
  /** Packed entries [from, to) of a snapshot; '' when it expired. */
  entries(sid: string, from: number, to: number): Promise<string>
  /** Stores cursors into one snapshot and keeps the snapshot as long as they live. */
  issue(sid: string, cursors: Array<[string, CursorValue]>): Promise<void>
  cursor(cursor: string): Promise<CursorValue | undefined>
}

export function redisExportCache(redis: Redis, prefix: string): ExportCache {
  const list = (sid: string) => `${prefix}:export:${sid}`
  const cur = (c: string) => `${prefix}:export-cursor:${c}`
  const ttl = CURSOR_TTL_SECONDS
  return {
    async putSnapshot(sid, packed) {
      await redis.set(list(sid), packed, 'EX', ttl)
    },
    async entries(sid, from, to) {
      if (to <= from) return ''
      return redis.getrange(list(sid), from * ENTRY_WIDTH, to * ENTRY_WIDTH - 1)
    },
    async issue(sid, cursors) {
      const p = redis.pipeline()
      for (const [c, v] of cursors) p.set(cur(c), JSON.stringify(v), 'EX', ttl)
      p.expire(list(sid), ttl)
      await p.exec()
    },
    async cursor(c) {
      const text = await redis.get(cur(c))
      return text ? (JSON.parse(text) as CursorValue) : undefined
    },
  }
}
