// Storage of resources and their versions: with the other files of repo/, the only place resource SQL is
// written (the search engine, search/, reads the same tables for its queries). `resource` holds the
// current version (deleted ones as tombstones); `resource_history` the earlier ones. The repository is
// given its collaborators (collaborators.ts): the index writer, the integrity checker, terminology
// maintenance and the custom search parameter registry, which every write statement involves.
import { type Sql, setTransactionTimeout, type TxSql } from '../../db/client'
import type { Fragment } from '../../db/fragments'
import { AppError } from '../../errors'
import { recordedResults } from './bundle-jobs'
import type { RepoCollaborators } from './collaborators'
import { type HistoryQuery, historyCount, historyPage } from './history'
import { IdAllocator } from './ids'
import { InsertBatcher } from './insert-batch'
import { type CurrentRow, countCurrent, currentPage } from './current-pages'
import { type PreparedBatch, prepareBatch, type ReindexOptions } from './reindex'
import { markAllForReindexing, performReindexingPass } from './reindex-pass'
import { type ResourceCount, resourceCounts } from './resource-counts'
import { type NewVersion, type ResourceRow, type StoredVersion, storedFromRow } from './types'
import { joinPrepared, type PreparedCopy, prepareCopy, type WriteOptions, WriteTx } from './write-tx'
import { nextTurn } from '../../next-turn'

export type { WriteOptions, WriteTx } from './write-tx'

export class Repo {
  readonly ids: IdAllocator
  private readonly collaborators: RepoCollaborators

  /** Plain creates, written together when they arrive together. */
  private readonly inserts: InsertBatcher

  /**
   * Without collaborators (`new Repo(sql)`) the repository reads, and refuses to write: a version
   * stored without its index rows would be invisible to search.
   */
  constructor(
    readonly sql: Sql,
    collaborators: RepoCollaborators = READ_ONLY,
    /** Budget of each statement of a write transaction (WRITE_STATEMENT_TIMEOUT_MS; 0: the pool's). */
    private readonly writeTimeoutMs = 0,
  ) {
    this.collaborators = collaborators
    this.ids = new IdAllocator(sql)
    this.inserts = new InsertBatcher(async (versions) => {
      const w = new WriteTx(this.sql as unknown as TxSql, this.collaborators, this.ids, { inTransaction: false })
      await w.write(versions, new Set())
      return async () => {
        await Promise.all(w.committed.map((after) => after()))
      }
    })
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

  /** A page of a history, newest first (history.ts). */
  history(q: HistoryQuery, offset: number, count: number): Promise<StoredVersion[]> {
    return historyPage(this.sql, q, offset, count)
  }

  historyCount(q: HistoryQuery): Promise<number> {
    return historyCount(this.sql, q)
  }

  /** Resources per type, deleted ones included until expunged (resource-counts.ts). */
  resourceCounts(): Promise<ResourceCount[]> {
    return resourceCounts(this.sql)
  }

  /** The entry results a transaction job recorded when it committed, if it did (bundle-jobs.ts). */
  recordedResults<R>(jobId: string): Promise<Map<number, R> | undefined> {
    return recordedResults(this.sql, jobId)
  }

  /** How many current resources `where` (a condition on `resource r0`; undefined: all) selects. */
  countCurrent(where: Fragment | undefined): Promise<number> {
    return countCurrent(this.sql, where)
  }

  /** The next `limit` current resources `where` selects after rid `after`, in rid order (current-pages.ts). */
  currentPage(where: Fragment | undefined, after: string, limit: number): Promise<CurrentRow[]> {
    return currentPage(this.sql, where, after, limit)
  }

  /** The index rows of a batch to reindex, extracted (CPU only); WriteTx.reindexBatch writes them. */
  prepareReindex(rows: CurrentRow[], opts?: ReindexOptions): PreparedBatch {
    return prepareBatch(this.collaborators.indexes, rows, opts)
  }

  /** Queues every current resource (of one type) for the legacy reindexing pass; how many were queued. */
  markAllForReindexing(type?: string): Promise<number> {
    return markAllForReindexing(this.sql, type)
  }

  /** One legacy reindexing pass: undefined when another pass runs, else how many it reindexed (reindex-pass.ts). */
  performReindexingPass(): Promise<number | undefined> {
    return performReindexingPass(this.sql, this.collaborators.indexes)
  }

  /**
   * Writes new resources (no version replaced) with one statement outside any explicit transaction: a
   * single statement is atomic, and this saves the BEGIN and COMMIT round trips of a plain create.
   * Inserts that arrive together share a statement (insert-batch.ts).
   */
  insert(versions: NewVersion[]): Promise<void> {
    return this.inserts.insert(versions)
  }

  /**
   * New resources' rows as COPY text, rids given (one nextval per hundred), before the transaction that
   * writes them with WriteTx.copyPrepared (a bulk import); undefined when the index writer cannot COPY.
   */
  async prepareCopy(versions: NewVersion[]): Promise<PreparedCopy | undefined> {
    if (!this.collaborators.indexes.prepareCopy || !this.collaborators.indexes.copyIndexes) return undefined
    const rids = await this.ids.allocate(versions.length)
    versions.forEach((v, i) => {
      v.rid = rids[i]
    })
    // In slices, the event loop turning between them: the batches in flight send their next statement
    // as soon as the one before is answered, not once the whole batch is prepared.
    const slices: PreparedCopy[] = []
    for (let i = 0; i < versions.length; i += PREPARE_SLICE) {
      if (i > 0) await nextTurn()
      slices.push(prepareCopy(this.collaborators, versions.slice(i, i + PREPARE_SLICE)) as PreparedCopy)
    }
    return joinPrepared(slices)
  }

  /** Runs `fn` in one database transaction; everything written through the WriteTx commits together. */
  async transaction<T>(fn: (w: WriteTx) => Promise<T>, opts: WriteOptions = {}): Promise<T> {
    let w: WriteTx | undefined
    const result = (await this.sql.begin((tx) => {
      setTransactionTimeout(tx, this.writeTimeoutMs)
      return fn((w = new WriteTx(tx, this.collaborators, this.ids, opts)))
    })) as T
    await Promise.all((w?.committed ?? []).map((after) => after()))
    return result
  }

  /** Resources of these types were physically removed ($expunge): what is kept of them elsewhere goes. */
  async removed(types: string[]): Promise<void> {
    const { searchParams, terminology } = this.collaborators
    await Promise.all([
      types.includes('SearchParameter') ? searchParams.changed() : undefined,
      types.includes('CodeSystem') || types.includes('ValueSet') ? terminology.removed() : undefined,
    ])
  }
}

/**
 * Versions prepared between two turns of the event loop (Repo.prepareCopy): about half a millisecond of
 * CPU. Synthea x10 $import (bench/bulk-import.ts 10 --first-only, alternated, load 3, 2026-11-28): backends
 * waiting on the worker 0.62-0.71 on average with 10, 1.06-1.11 with 50, 1.26-1.27 with no turn.
 */
const PREPARE_SLICE = 10

const readOnly = (): never => {
  throw new AppError('fault', 'This repository was built without its collaborators (shared/fhir/store.ts createRepo): it cannot write')
}

const READ_ONLY: RepoCollaborators = {
  indexes: { indexRows: readOnly, writeIndexes: readOnly, countRows: readOnly },
  integrity: { checkReferences: readOnly, referrers: readOnly },
  terminology: { writeConcepts: readOnly, removed: async () => {} },
  searchParams: { check: readOnly, changed: async () => {} },
}
