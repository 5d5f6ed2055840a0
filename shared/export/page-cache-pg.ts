// The export page cache in PostgreSQL, for the embedded form (no Redis): the same contract as the
// Redis one (page-cache.ts), in tables export_snapshot and export_cursor (migration 0010). Expired
// rows are purged whenever a snapshot is written.
import type { Sql } from '../db/client'
import { CURSOR_TTL_SECONDS } from './cursor'
import { ENTRY_WIDTH } from './everything-query'
import type { CursorValue, ExportCache } from './page-cache'

export function pgExportCache(sql: Sql): ExportCache {
  const expiry = () => new Date(Date.now() + CURSOR_TTL_SECONDS * 1000).toISOString()
  return {
    async putSnapshot(sid, list) {
      await sql`delete from export_cursor where expires_at < now()`
      await sql`delete from export_snapshot where expires_at < now()`
      await sql`
        insert into export_snapshot (sid, list, expires_at) values (${sid}, ${list}, ${expiry()})
        on conflict (sid) do update set expires_at = excluded.expires_at`
    },
    async entries(sid, from, to) {
      if (to <= from) return ''
      const [row] = await sql<{ part: string }[]>`
        select substr(list, ${from * ENTRY_WIDTH + 1}, ${(to - from) * ENTRY_WIDTH}) as part
        from export_snapshot where sid = ${sid} and expires_at > now()`
      return row?.part ?? ''
    },
    async issue(sid, cursors) {
      const at = expiry()
      await sql`
        insert into export_cursor (cursor, value, expires_at)
        select c, v, ${at} from unnest(${cursors.map(([c]) => c)}::text[], ${cursors.map(([, v]) => JSON.stringify(v))}::text[]) as x(c, v)
        on conflict (cursor) do update set expires_at = excluded.expires_at`
      await sql`update export_snapshot set expires_at = greatest(expires_at, ${at}) where sid = ${sid}`
    },
    async cursor(c) {
      const [row] = await sql<{ value: string }[]>`select value from export_cursor where cursor = ${c} and expires_at > now()`
      return row ? (JSON.parse(row.value) as CursorValue) : undefined
    },
  }
}
