// Storage of resources and their versions: the only place resource SQL is written.
// `resource` holds the current version (deleted ones as tombstones); `resource_history` the earlier ones.
import type { Sql, TxSql } from '../../db/client'
import { type Fragment, join } from '../../db/fragments'
import { IdAllocator } from './ids'
import { type NewVersion, type ResourceRow, type StoredVersion, storedFromRow } from './types'

/**
 * Called for every write with the versions written and the rids whose previous current version they
 * replace. A hook may return CTEs (`name as (...)`, comma-separated) that become part of the write's
 * single statement, e.g. the search index rows; it may also check the versions and throw.
 */
export type WriteHook = (w: WriteTx, written: NewVersion[], superseded: string[]) => Promise<HookCtes | undefined>

/** Wrapped in an object because a postgres.js fragment is thenable: awaited bare, it would run alone. */
export interface HookCtes {
  ctes: Fragment
  /** A (non-modifying) CTE with one column `ok` that the statement must read so that it runs, e.g. a
   *  check that raises. */
  check?: string
  /** Turns an error the CTEs raised into the hook's own error. */
  mapError?: (err: unknown) => Error | undefined
}

export class Repo {
  readonly ids: IdAllocator
  private readonly hooks: WriteHook[] = []
  private readonly removalListeners: ((types: string[]) => void | Promise<void>)[] = []

  constructor(readonly sql: Sql) {
    this.ids = new IdAllocator(sql)
  }

  addWriteHook(hook: WriteHook): void {
    this.hooks.push(hook)
  }

  /** Called after resources were physically removed ($expunge), with their types: caches drop them. */
  onRemoved(listener: (types: string[]) => void | Promise<void>): void {
    this.removalListeners.push(listener)
  }

  /** Resolves once this node's listeners are done (other nodes are told through their own means). */
  async removed(types: string[]): Promise<void> {
    if (types.length > 0) await Promise.all(this.removalListeners.map((l) => l(types)))
  }

  /** The current version, deleted or not; undefined when the id was never used. */
  async read(type: string, id: string): Promise<StoredVersion | undefined> {
    const [row] = await this.sql<ResourceRow[]>`
      select rid::text, res_type, id, version, last_updated, deleted, content
      from resource where res_type = ${type} and id = ${id}`
    return row && storedFromRow(row)
  }

  async vread(type: string, id: string, version: number): Promise<StoredVersion | undefined> {
    const [row] = await this.sql<ResourceRow[]>`
      select rid::text, res_type, id, version, last_updated, deleted, content
      from resource where res_type = ${type} and id = ${id} and version = ${version}
      union all
      select h.rid::text, h.res_type, h.id, h.version, h.last_updated, h.deleted, h.content
      from resource_history h join resource r on r.rid = h.rid
      where r.res_type = ${type} and r.id = ${id} and h.version = ${version}`
    return row && storedFromRow(row)
  }

  /**
   * Writes new resources (no version replaced) with one statement outside any explicit transaction: a
   * single statement is atomic, and this saves the BEGIN and COMMIT round trips of a plain create.
   */
  async insert(versions: NewVersion[]): Promise<void> {
    const w = new WriteTx(this.sql as unknown as TxSql, this.hooks)
    await w.write(versions, new Set())
    await Promise.all(w.committed.map((after) => after()))
  }

  /** Runs `fn` in one database transaction; everything written through the WriteTx commits together. */
  async transaction<T>(fn: (w: WriteTx) => Promise<T>): Promise<T> {
    let w: WriteTx | undefined
    const result = (await this.sql.begin((tx) => fn((w = new WriteTx(tx, this.hooks))))) as T
    await Promise.all((w?.committed ?? []).map((after) => after()))
    return result
  }
}

/** Writes inside one transaction. Each method is one statement, set-wise where it takes a list. */
export class WriteTx {
  /** Run once the transaction has committed (never when it rolls back); the write waits for them. */
  readonly committed: (() => void | Promise<void>)[] = []

  constructor(
    readonly tx: TxSql,
    private readonly hooks: WriteHook[],
  ) {}

  /** Locks and returns the current versions of the given resources (missing ones are absent). */
  async lock(refs: { type: string; id: string }[]): Promise<Map<string, StoredVersion>> {
    const out = new Map<string, StoredVersion>()
    if (refs.length === 0) return out
    const types = refs.map((r) => r.type)
    const ids = refs.map((r) => r.id)
    const rows = await this.tx<ResourceRow[]>`
      select r.rid::text, r.res_type, r.id, r.version, r.last_updated, r.deleted, r.content
      from resource r join unnest(${types}::text[], ${ids}::text[]) as k(t, i) on r.res_type = k.t and r.id = k.i
      order by r.rid
      for update of r`
    for (const row of rows) out.set(`${row.res_type}/${row.id}`, storedFromRow(row))
    return out
  }

  /**
   * Writes new versions with ONE statement: versions replacing a current one move it to
   * resource_history and update it in place, new resources are inserted, and the hooks' CTEs (index
   * rows) run in the same statement. Arrays go to unnest(): booleans as 0/1 and null content as ''
   * (postgres.js does not serialise boolean array elements reliably). Raises 23505 when a new
   * (type, id) races another create.
   */
  async write(versions: NewVersion[], supersedes: Set<string>): Promise<void> {
    if (versions.length === 0) return
    const sql = this.tx
    const fresh = versions.filter((v) => !supersedes.has(v.rid))
    const next = versions.filter((v) => supersedes.has(v.rid))
    const superseded = next.map((v) => v.rid)
    const parts: Fragment[] = []
    if (next.length > 0) {
      parts.push(sql`
        moved as (insert into resource_history (rid, version, res_type, id, last_updated, deleted, content)
          select rid, version, res_type, id, last_updated, deleted, content from resource where rid = any(${superseded}::bigint[])),
        replaced as (update resource r set version = v.version, last_updated = v.last_updated, deleted = v.deleted = 1, content = nullif(v.content, '')
          from unnest(${superseded}::bigint[], ${next.map((v) => v.version)}::int[], ${next.map((v) => v.lastUpdated.toISOString())}::timestamptz[],
                      ${next.map((v) => (v.deleted ? 1 : 0))}::int[], ${next.map((v) => v.content ?? '')}::text[])
               as v(rid, version, last_updated, deleted, content)
          where r.rid = v.rid)`)
    }
    if (fresh.length > 0) {
      parts.push(sql`
        created as (insert into resource (rid, res_type, id, version, last_updated, deleted, content)
          select rid, res_type, id, version, last_updated, deleted = 1, nullif(content, '')
          from unnest(${fresh.map((v) => v.rid)}::bigint[], ${fresh.map((v) => v.type)}::text[], ${fresh.map((v) => v.id)}::text[],
                      ${fresh.map((v) => v.version)}::int[], ${fresh.map((v) => v.lastUpdated.toISOString())}::timestamptz[],
                      ${fresh.map((v) => (v.deleted ? 1 : 0))}::int[], ${fresh.map((v) => v.content ?? '')}::text[])
               as v(rid, res_type, id, version, last_updated, deleted, content))`)
    }
    const outs: HookCtes[] = []
    for (const hook of this.hooks) {
      const out = await hook(this, versions, superseded)
      if (out) {
        parts.push(out.ctes)
        outs.push(out)
      }
    }
    const reads = outs.filter((o) => o.check).map((o) => sql`(select ok from ${sql(o.check as string)})`)
    const checks = reads.length > 0 ? sql`, ${join(sql as unknown as Sql, reads, sql`, `)}` : sql``
    try {
      await sql`with ${join(sql as unknown as Sql, parts, sql`, `)} select 1 ${checks}`
    } catch (err) {
      for (const o of outs) {
        const mapped = o.mapError?.(err)
        if (mapped) throw mapped
      }
      throw err
    }
  }
}
