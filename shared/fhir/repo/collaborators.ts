// What the repository works with besides its own tables, each named for what it does. It is handed
// them when constructed (shared/fhir/store.ts builds them); their code lives with what they keep: the
// search indexes in search/, the concept store in terminology/, custom search parameters in search/.
// Every write statement carries their rows, so a version, its index rows and its concept rows commit
// together or not at all.
import type { TxSql } from '../../db/client'
import type { Fragment } from '../../db/fragments'
import type { NewVersion } from './types'

/** A resource whose index rows are (re)computed: its rid, type and parsed content (none when deleted). */
export interface Indexable {
  rid: string
  type: string
  resource?: any
  deleted?: boolean
}

/** The index rows of some resources, as an IndexWriter extracted them (opaque to the repository). */
export type IndexRowSet = { readonly extractedBy: 'IndexWriter' }

/** Index rows as COPY text, as an IndexWriter prepared them (opaque to the repository). */
export type IndexCopy = { readonly preparedBy: 'IndexWriter' }

/** Keeps the search index tables in step with the current versions (search/index/index-store.ts). */
export interface IndexWriter {
  /** The index rows of `resources` under the current search parameters: CPU only, so that a reindex
   *  extracts the next batch while the database writes this one. `fulltext: false` leaves out the
   *  full-text rows (they depend on the content alone). */
  indexRows(resources: Indexable[], opts?: { fulltext?: boolean }): IndexRowSet
  /** The CTEs that delete the index rows of the `superseded` rids and insert `rows` (those of rids in
   *  `keep` only, when given); undefined when there is nothing to do. */
  writeIndexes(tx: TxSql, rows: IndexRowSet, superseded: string[], opts?: { keep?: ReadonlySet<string>; fulltext?: boolean }): Fragment | undefined
  /** The COPY text of extracted rows of resources that have none yet (a bulk import's new resources):
   *  CPU only, so that it is built before the transaction that sends it. With copyIndexes. */
  prepareCopy?(rows: IndexRowSet): IndexCopy
  /** Writes prepared rows with COPY (those of several prepareCopy calls together, one COPY a table),
   *  all but the full-text rows, whose CTE it returns for the caller's statement. Absent: the CTEs are used. */
  copyIndexes?(tx: TxSql, copies: IndexCopy[]): Promise<PendingCtes | undefined>
  /** How many index rows one resource has, by `table code` ($reindex's report of one resource). */
  countRows(tx: TxSql, rid: string): Promise<Map<string, number>>
}

/** A check that runs inside a write's statement: CTEs, one of which raises when the check fails. */
export interface StatementCheck {
  ctes: Fragment
  /** The CTE (one column `ok`) the statement must read so that it runs. */
  check: string
  /** Turns what the CTEs raised into the check's own error (undefined: not the check's). */
  mapError: (err: unknown) => Error | undefined
}

/** A current resource holding a reference, as a delete's conflict names it. */
export interface Referrer {
  type: string
  id: string
  /** The search parameter of the reference. */
  code: string
  content: string
}

/** Referential integrity (HAPI's enforce_referential_integrity_on_write and _on_delete). */
export interface IntegrityChecker {
  /** Refuses versions that reference a local resource that does not exist, other than those of
   *  `alsoWritten` (Type/id), written by the same write. Undefined when there is nothing to check (or
   *  the check on write is turned off). */
  checkReferences(tx: TxSql, written: NewVersion[], alsoWritten: ReadonlySet<string>): StatementCheck | undefined
  /** Up to `limit` current resources other than `target` itself that reference it. */
  referrers(tx: TxSql, target: { rid: string; type: string; id: string }, limit: number): Promise<Referrer[]>
}

/** CTEs computed asynchronously, wrapped in an object because a postgres.js fragment is thenable:
 *  resolved bare, it would run alone. */
export interface PendingCtes {
  ctes: Fragment
}

/** Keeps the concept store in step with stored CodeSystems and ValueSets (terminology/maintenance.ts). */
export interface TerminologyMaintenance {
  /** The CTEs that replace the concept rows of the CodeSystems and ValueSets among `written`. */
  writeConcepts(tx: TxSql, written: NewVersion[]): Promise<PendingCtes | undefined>
  /** CodeSystems or ValueSets were removed ($expunge): cached expansions are dropped. */
  removed(): Promise<void>
}

/** Keeps every node's registry of custom search parameters in step with stored SearchParameters. */
export interface SearchParamRegistry {
  /** Refuses (400) SearchParameters among `written` that cannot be used; true when there were any. */
  check(written: NewVersion[]): boolean
  /** Stored SearchParameters changed: reload here (resolves when done) and on every other node. */
  changed(): Promise<void>
}

export interface RepoCollaborators {
  indexes: IndexWriter
  integrity: IntegrityChecker
  terminology: TerminologyMaintenance
  searchParams: SearchParamRegistry
}
