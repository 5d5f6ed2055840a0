// The index rows of new resources written with COPY (db/copy-rows.ts) rather than as CTEs of the write's
// statement (index-store.ts): a bulk import's fresh resources, which have no earlier rows to delete. The
// columns of each table are those its type's `insert` (types/<type>.ts) fills, in the same order,
// from the same row properties (reshaped first as `insert` reshapes them: composite), beside it in its
// unit (`copy`); tests/bulk-import-copy.test.ts compares every index row written both ways. A type without
// `copy` keeps its CTE, as do the full-text rows (to_tsvector, which COPY cannot call): those CTEs are
// returned for the caller's statement.
import type { TxSql } from '../../../db/client'
import { copyRows } from '../../../db/copy-rows'
import type { IndexRowSet, IndexWriter, PendingCtes } from '../../repo/collaborators'
import { type Keyed, paramType } from '../types'
import { type ExtractedRows, extractedCtes, indexWriter } from './index-store'

/** The repository's index writer (index-store.ts) that can also COPY the rows of new resources. */
export function copyingIndexWriter(baseUrl?: string): IndexWriter {
  return { ...indexWriter(baseUrl), copyIndexes: (tx: TxSql, rows: IndexRowSet) => copyIndexRows(tx, rows as unknown as ExtractedRows) }
}

type RowsOf = ExtractedRows['rows']

/**
 * COPYs the index rows of resources that had none (one table after the other, on the transaction's
 * connection); returns the CTEs of the rest (types not copied, full-text rows) for the caller's statement.
 */
export async function copyIndexRows(tx: TxSql, x: ExtractedRows): Promise<PendingCtes | undefined> {
  const rest = {} as RowsOf
  for (const type of Object.keys(x.rows) as (keyof RowsOf)[]) {
    const t = paramType(type)
    const spec = t?.copy
    if (t && spec) {
      const rows = x.rows[type] as Keyed<object>[]
      await copyRows(tx, t.table, spec.columns, spec.shape ? spec.shape(rows) : rows, spec.keys)
    }
    ;(rest[type] as unknown[]) = spec ? [] : x.rows[type]
  }
  const ctes = extractedCtes(tx, { ...x, rows: rest }, [])
  return ctes && { ctes } // wrapped: a fragment is thenable, and a promise resolved with it would run it alone
}
