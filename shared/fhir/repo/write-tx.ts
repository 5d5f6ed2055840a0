// Writes inside one database transaction. A write of versions is one statement (or a few, for a large
// write): the resource rows, the history rows they replace, and what the repository's collaborators
// keep in step with them (index rows, concept rows, the reference check) as CTEs of that statement.
import type { Sql, TxSql } from '../../db/client'
import { type Fragment, join } from '../../db/fragments'
import { copyPieces, copyText } from '../../db/copy-rows'
import { textColumns } from '../../db/text-columns'
import { recordResults } from './bundle-jobs'
import type { IndexCopy, RepoCollaborators, Referrer, StatementCheck } from './collaborators'
import type { IdAllocator } from './ids'
import type { CurrentRow } from './current-pages'
import { type PreparedBatch, prepareBatch, type ReindexOptions, writeBatch } from './reindex'
import { type NewVersion, type ResourceRow, type StoredVersion, storedFromRow } from './types'
import { type LockResult, type LockedVersion, lockVersion, replaceContent } from './version-content'

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
  /** New resources (a write replacing none, no reference check) written with COPY (db/copy-rows.ts): a
   *  bulk import. Synthea x2 NDJSON into an empty database, batches of 500, alternated on the loaded
   *  machine: PostgreSQL 161-169 µs per resource against 200-202 with the statement's CTEs. */
  copyNew?: boolean
}

export class WriteTx {
  /** Run once the transaction has committed (never when it rolls back); the write waits for them. */
  readonly committed: (() => void | Promise<void>)[] = []

  /** The Type/id of every version of the write in progress (one write may take several statements). */
  private writing: ReadonlySet<string> = new Set()

  /** In a real transaction, so that a large write may take several statements. */
  private readonly inTransaction: boolean
  /** References to local resources must resolve (the integrity checker runs on each statement). */
  private readonly checkReferences: boolean
  private readonly chunk: number
  private readonly copyNew: boolean

  constructor(
    readonly tx: TxSql,
    private readonly collaborators: RepoCollaborators,
    private readonly ids: IdAllocator,
    opts: WriteOptions & { inTransaction?: boolean } = {},
  ) {
    this.inTransaction = opts.inTransaction ?? true
    this.checkReferences = opts.checkReferences ?? true
    this.chunk = opts.statementVersions ?? WRITE_CHUNK
    this.copyNew = opts.copyNew ?? false
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

  /** Writes a prepared reindex batch; how many were reindexed (the others changed since they were read). */
  reindexBatch(batch: PreparedBatch, opts?: ReindexOptions): Promise<number> {
    return writeBatch(this.tx, this.collaborators.indexes, batch, opts)
  }

  /** Reindexes current versions now (extraction and write in one go). */
  reindexRows(rows: CurrentRow[], opts?: ReindexOptions): Promise<number> {
    return this.reindexBatch(prepareBatch(this.collaborators.indexes, rows, opts), opts)
  }

  /** How many index rows one resource has, by `table code`. */
  indexRowCounts(rid: string): Promise<Map<string, number>> {
    return this.collaborators.indexes.countRows(this.tx, rid)
  }

  /** Locks one version, the current one when `version` is absent (version-content.ts). */
  lockVersion(type: string, id: string, version?: number): Promise<LockResult> {
    return lockVersion(this.tx, type, id, version)
  }

  /** Rewrites the content of a locked version in place, without a new version ($meta-add, $meta-delete). */
  async replaceContent(locked: LockedVersion, content: string, resource: any): Promise<void> {
    await replaceContent(this.tx, locked, content)
    // The current version's index rows follow its content.
    if (locked.current) await this.reindex([{ rid: locked.stored.rid, type: locked.stored.type, resource }])
  }

  /** Records the entry results of a transaction job with its writes (bundle-jobs.ts). */
  recordResults<R>(jobId: string, results: Map<number, R>): Promise<void> {
    return recordResults(this.tx, jobId, results)
  }

  /** Up to `limit` current resources other than `target` that reference it: what keeps it from being deleted. */
  referrers(target: StoredVersion, limit: number): Promise<Referrer[]> {
    return this.collaborators.integrity.referrers(this.tx, target, limit)
  }

  /** The index rows of current versions rewritten in place (their content changed without a new version). */
  async reindex(versions: { rid: string; type: string; resource: any }[]): Promise<void> {
    const { indexes } = this.collaborators
    const ctes = indexes.writeIndexes(
      this.tx,
      indexes.indexRows(versions),
      versions.map((v) => v.rid),
    )
    if (ctes) await this.tx`with ${ctes} select 1`
  }

  /**
   * Writes new versions: versions replacing a current one move it to resource_history and update it in
   * place, new resources are inserted, and the collaborators' CTEs run in the same statement. Inside a
   * transaction a large write goes in statements of WRITE_CHUNK versions (or the transaction's
   * statementVersions), each sent as soon as it is built, so the next chunk's extraction and
   * serialisation run while the database writes the previous one (and no parameter grows with the whole
   * bundle). New resources without a rid (an update that
   * creates with a client id) are given one here. Raises 23505 when a new (type, id) races another create.
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
      if (
        this.copyNew &&
        this.inTransaction &&
        supersedes.size === 0 &&
        !this.checkReferences &&
        this.collaborators.indexes.prepareCopy &&
        this.collaborators.indexes.copyIndexes
      ) {
        for (let i = 0; i < versions.length; i += this.chunk) await this.copy(versions.slice(i, i + this.chunk))
        return
      }
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

  /** New resources (no version replaced, no reference check) with COPY (copyPrepared). */
  private async copy(versions: NewVersion[]): Promise<void> {
    await this.copyPrepared(prepareCopy(this.collaborators, versions) as PreparedCopy)
  }

  /**
   * Writes new resources whose rows prepareCopy built (a bulk import's, in a transaction of `copyNew`
   * without the reference check): the resource rows, then their index rows (copy-rows.ts,
   * index-copy.ts), then one statement for the rest (the per-type counts, the full-text rows, concept
   * rows). Raises 23505 when a new (type, id) races another create.
   */
  async copyPrepared(p: PreparedCopy): Promise<void> {
    const sql = this.tx
    const { indexes, terminology, searchParams } = this.collaborators
    if (!this.copyNew || !this.inTransaction || this.checkReferences || !indexes.copyIndexes) throw new Error('copyPrepared: this write does not COPY')
    const { versions } = p
    if (versions.length === 0) return
    if (searchParams.check(versions)) this.committed.push(() => searchParams.changed())
    await copyText(sql, 'resource', RESOURCE_COLUMNS, p.resource)
    const parts: Fragment[] = []
    const fulltext = await indexes.copyIndexes(sql, p.indexes)
    if (fulltext) parts.push(fulltext.ctes)
    const counts = new Map<string, number>()
    for (const v of versions) counts.set(v.type, (counts.get(v.type) ?? 0) + 1)
    parts.push(
      sql`counted as (insert into resource_count (res_type, n) select * from unnest(${[...counts.keys()]}::text[], ${[...counts.values()]}::bigint[]))`,
    )
    const concepts = await terminology.writeConcepts(sql, versions)
    if (concepts) parts.push(concepts.ctes)
    await sql`with ${join(sql as unknown as Sql, parts, sql`, `)} select 1`
  }

  /** Sends the statement (on the call, before the first await) and maps the checks' errors. */
  private async run(st: { query: Promise<unknown>; check?: StatementCheck }): Promise<void> {
    try {
      await st.query
    } catch (err) {
      throw st.check?.mapError(err) ?? err
    }
  }

  /** One statement for `versions` (not yet sent: postgres.js sends a query when it is awaited). */
  private async statement(versions: NewVersion[], supersedes: Set<string>): Promise<{ query: Promise<unknown>; check?: StatementCheck }> {
    const sql = this.tx
    const { indexes, integrity, terminology, searchParams } = this.collaborators
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
    // Custom SearchParameters are checked before anything is sent, and reloaded once committed.
    if (searchParams.check(versions)) this.committed.push(() => searchParams.changed())
    const check = this.checkReferences ? integrity.checkReferences(sql, versions, this.writing) : undefined
    if (check) parts.push(check.ctes)
    const indexCtes = indexes.writeIndexes(sql, indexes.indexRows(versions), superseded)
    if (indexCtes) parts.push(indexCtes)
    const concepts = await terminology.writeConcepts(sql, versions)
    if (concepts) parts.push(concepts.ctes)
    const reads = check ? sql`, (select ok from ${sql(check.check)})` : sql``
    return { query: sql`with ${join(sql as unknown as Sql, parts, sql`, `)} select 1 ${reads}`, check }
  }
}

/** New resources' rows as COPY text, built before the transaction that writes them (WriteTx.copyPrepared). */
export interface PreparedCopy {
  versions: NewVersion[]
  resource: string[]
  /** One per preparation joined (joinPrepared): copyIndexes writes them together. */
  indexes: IndexCopy[]
}

/** Several preparations written as one (one COPY a table). */
export function joinPrepared(list: PreparedCopy[]): PreparedCopy {
  return { versions: list.flatMap((p) => p.versions), resource: list.flatMap((p) => p.resource), indexes: list.flatMap((p) => p.indexes) }
}

/**
 * CPU only: the COPY text of new resources (their rids given) and of their index rows; undefined when
 * the index writer cannot COPY.
 */
export function prepareCopy(collaborators: RepoCollaborators, versions: NewVersion[]): PreparedCopy | undefined {
  const { indexes } = collaborators
  if (!indexes.prepareCopy || !indexes.copyIndexes) return undefined
  return {
    versions,
    resource: copyPieces(storedColumns(versions), STORED_KEYS),
    indexes: [indexes.prepareCopy(indexes.indexRows(versions))],
  }
}

const RESOURCE_COLUMNS = ['rid', 'res_type', 'id', 'version', 'last_updated', 'deleted', 'content']
/** The keys of storedColumns' rows, in RESOURCE_COLUMNS' order. */
const STORED_KEYS = ['rid', 'type', 'id', 'version', 'lastUpdated', 'deleted', 'content'] as const

/** What a resource row stores of each version, one object per version (for COPY and for a VALUES list). */
const storedColumns = (versions: NewVersion[]) =>
  versions.map((v) => ({
    rid: v.rid,
    type: v.type,
    id: v.id,
    version: v.version,
    lastUpdated: v.lastUpdated,
    deleted: v.deleted === true,
    content: v.content,
  }))

/** The stored columns of versions as `... as v(rid, type, id, version, "lastUpdated", deleted, content)`, typed. */
function versionRows(sql: TxSql, versions: NewVersion[]): Fragment {
  return sql`(select rid::bigint, type, id, version::int, "lastUpdated"::timestamptz, deleted::boolean, content
      from ${textColumns(sql, storedColumns(versions), STORED_KEYS)} as c(rid, type, id, version, "lastUpdated", deleted, content)
    ) as v`
}
