// Storage of resources and their versions: the only place resource SQL is written.
// `resource` holds the current version (deleted ones as tombstones); `resource_history` the earlier ones.
import type { Sql, TxSql } from '../../db/client'
import { type Fragment, join } from '../../db/fragments'
import { textColumns } from '../../db/text-columns'
import { IdAllocator } from './ids'
import { InsertBatcher } from './insert-batch'
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

/** Versions per statement of a large write inside a transaction. */
const WRITE_CHUNK = 100

/** How a transaction writes (Repo.transaction). */
export interface WriteOptions {
  /** false: no referential-integrity check (a bulk import, whose files come in no particular order, as
   *  HAPI's bulk import writes). */
  checkReferences?: boolean
  /** Versions per statement of a large write (WRITE_CHUNK by default). A bulk import, which overlaps its
   *  own reading with the writes, takes fewer, larger statements: measured on Synthea NDJSON, 500 a
   *  statement cost PostgreSQL 9% and the worker 11% less CPU per resource than 100. */
  statementVersions?: number
}

export class Repo {
  readonly ids: IdAllocator
  private readonly hooks: WriteHook[] = []
  private readonly removalListeners: ((types: string[]) => void | Promise<void>)[] = []

  /** Plain creates, written together when they arrive together. */
  private readonly inserts: InsertBatcher

  constructor(readonly sql: Sql) {
    this.ids = new IdAllocator(sql)
    this.inserts = new InsertBatcher(async (versions) => {
      const w = new WriteTx(this.sql as unknown as TxSql, this.hooks, this.ids, { inTransaction: false })
      await w.write(versions, new Set())
      return async () => {
        await Promise.all(w.committed.map((after) => after()))
      }
    })
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
   * Inserts that arrive together share a statement (insert-batch.ts).
   */
  insert(versions: NewVersion[]): Promise<void> {
    return this.inserts.insert(versions)
  }

  /** Runs `fn` in one database transaction; everything written through the WriteTx commits together. */
  async transaction<T>(fn: (w: WriteTx) => Promise<T>, opts: WriteOptions = {}): Promise<T> {
    let w: WriteTx | undefined
    const result = (await this.sql.begin((tx) => fn((w = new WriteTx(tx, this.hooks, this.ids, opts))))) as T
    await Promise.all((w?.committed ?? []).map((after) => after()))
    return result
  }
}

/** Writes inside one transaction. Each method is one statement, set-wise where it takes a list. */
export class WriteTx {
  /** Run once the transaction has committed (never when it rolls back); the write waits for them. */
  readonly committed: (() => void | Promise<void>)[] = []

  /** The Type/id of every version of the write in progress (one write may take several statements). */
  writing: ReadonlySet<string> = new Set()

  /** In a real transaction, so that a large write may take several statements. */
  private readonly inTransaction: boolean
  /** References to local resources must resolve (the referential-integrity hook reads it). */
  readonly checkReferences: boolean
  private readonly chunk: number

  constructor(
    readonly tx: TxSql,
    private readonly hooks: WriteHook[],
    private readonly ids: IdAllocator,
    opts: WriteOptions & { inTransaction?: boolean } = {},
  ) {
    this.inTransaction = opts.inTransaction ?? true
    this.checkReferences = opts.checkReferences ?? true
    this.chunk = opts.statementVersions ?? WRITE_CHUNK
  }

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
   * Writes new versions: versions replacing a current one move it to resource_history and update it in
   * place, new resources are inserted, and the hooks' CTEs (index rows) run in the same statement.
   * Inside a transaction a large write goes in statements of WRITE_CHUNK versions (or the transaction's
   * statementVersions), each sent as soon as it is built, so the next chunk's extraction and
   * serialisation run while the database writes the previous one (and no parameter grows with the whole
   * bundle). New resources without a rid (an update that creates with a client id) are given one here.
   * Raises 23505 when a new (type, id) races another create.
   */
  async write(versions: NewVersion[], supersedes: Set<string>): Promise<void> {
    if (versions.length === 0) return
    const unnumbered = versions.filter((v) => v.rid === '')
    if (unnumbered.length > 0) {
      const rids = await this.ids.allocate(unnumbered.length, this.inTransaction ? this.tx : undefined)
      unnumbered.forEach((v, i) => {
        v.rid = rids[i]
      })
    }
    this.writing = new Set(versions.map((v) => `${v.type}/${v.id}`))
    try {
      if (!this.inTransaction || versions.length <= this.chunk) return await this.run(await this.statement(versions, supersedes))
      const running: Promise<void>[] = []
      let failed = false
      for (let i = 0; i < versions.length && !failed; i += this.chunk) {
        // At most two statements in flight: the overlap is kept, the memory of queued ones is not.
        if (running.length >= 2) await running[running.length - 2].catch(() => {})
        if (failed) break
        const run = this.run(await this.statement(versions.slice(i, i + this.chunk), supersedes))
        run.catch(() => {
          failed = true
        })
        running.push(run)
      }
      await Promise.all(running)
    } finally {
      this.writing = new Set()
    }
  }

  /** Sends the statement (on the call, before the first await) and maps the hooks' errors. */
  private async run(st: { query: Promise<unknown>; outs: HookCtes[] }): Promise<void> {
    try {
      await st.query
    } catch (err) {
      for (const o of st.outs) {
        const mapped = o.mapError?.(err)
        if (mapped) throw mapped
      }
      throw err
    }
  }

  /** One statement for `versions` (not yet sent: postgres.js sends a query when it is awaited). */
  private async statement(versions: NewVersion[], supersedes: Set<string>): Promise<{ query: Promise<unknown>; outs: HookCtes[] }> {
    const sql = this.tx
    const fresh = versions.filter((v) => !supersedes.has(v.rid))
    const next = versions.filter((v) => supersedes.has(v.rid))
    const superseded = next.map((v) => v.rid)
    const parts: Fragment[] = []
    if (next.length > 0) {
      parts.push(sql`
        moved as (insert into resource_history (rid, version, res_type, id, last_updated, deleted, content)
          select rid, version, res_type, id, last_updated, deleted, content from resource where rid = any(${superseded}::bigint[])),
        replaced as (update resource r set version = v.version, last_updated = v."lastUpdated", deleted = v.deleted, content = v.content
          from ${versionRows(sql, next)}
          where r.rid = v.rid)`)
    }
    if (fresh.length > 0) {
      parts.push(sql`
        created as (insert into resource (rid, res_type, id, version, last_updated, deleted, content)
          select rid, type, id, version, "lastUpdated", deleted, content from ${versionRows(sql, fresh)}
          returning res_type),
        counted as (insert into resource_count (res_type, n) select res_type, count(*) from created group by res_type)`)
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
    return { query: sql`with ${join(sql as unknown as Sql, parts, sql`, `)} select 1 ${checks}`, outs }
  }
}

/** The stored columns of versions as `... as v(rid, type, id, version, "lastUpdated", deleted, content)`, typed. */
function versionRows(sql: TxSql, versions: NewVersion[]): Fragment {
  const rows = versions.map((v) => ({
    rid: v.rid,
    type: v.type,
    id: v.id,
    version: v.version,
    lastUpdated: v.lastUpdated,
    deleted: v.deleted === true,
    content: v.content,
  }))
  return sql`(select rid::bigint, type, id, version::int, "lastUpdated"::timestamptz, deleted::boolean, content
      from ${textColumns(sql, rows, ['rid', 'type', 'id', 'version', 'lastUpdated', 'deleted', 'content'])} as c(rid, type, id, version, "lastUpdated", deleted, content)
    ) as v`
}
