// The index rows of new resources written with COPY (db/copy-rows.ts) rather than as CTEs of the write's
// statement (index-store.ts): a bulk import's fresh resources, which have no earlier rows to delete. The
// columns of each table are those its type's `insert` (types/<type>.ts) fills, in the same order,
// from the same row properties (reshaped first as `insert` reshapes them: composite), beside it in its
// unit (`copy`); tests/bulk-import-copy.test.ts compares every index row written both ways. A type without
// `copy` keeps its CTE, as do the full-text rows (to_tsvector, which COPY cannot call): those CTEs are
// returned for the caller's statement.
import type { TxSql } from '../../../db/client'
import { copyPieces, copyText } from '../../../db/copy-rows'
import type { IndexCopy, IndexRowSet, IndexWriter, PendingCtes } from '../../repo/collaborators'
import { type Keyed, paramType } from '../types'
import { type ExtractedRows, extractedCtes, indexWriter, mergeExtracted } from './index-store'

/** The repository's index writer (index-store.ts) that can also COPY the rows of new resources. */
export function copyingIndexWriter(baseUrl?: string): IndexWriter {
  return {
    ...indexWriter(baseUrl),
    prepareCopy: (rows: IndexRowSet) => prepareIndexCopy(rows as unknown as ExtractedRows) as unknown as IndexCopy,
    copyIndexes: (tx: TxSql, copies: IndexCopy[]) => copyIndexRows(tx, copies as unknown as PreparedIndexCopy[]),
  }
}

type RowsOf = ExtractedRows['rows']

/** Each copied table's COPY text, and the rows left to the CTEs (types not copied, full-text rows). */
export interface PreparedIndexCopy {
  tables: { table: string; columns: readonly string[]; pieces: string[] }[]
  rest: ExtractedRows
}

/** The COPY text of the rows of resources that had none (CPU only). */
export function prepareIndexCopy(x: ExtractedRows): PreparedIndexCopy {
  const rest = {} as RowsOf
  const tables: PreparedIndexCopy['tables'] = []
  for (const type of Object.keys(x.rows) as (keyof RowsOf)[]) {
    const t = paramType(type)
    const spec = t?.copy
    if (t && spec) {
      const rows = x.rows[type] as Keyed<object>[]
      const pieces = copyPieces(spec.shape ? spec.shape(rows) : rows, spec.keys)
      if (pieces.length > 0) tables.push({ table: t.table, columns: spec.columns, pieces })
    }
    ;(rest[type] as unknown[]) = spec ? [] : x.rows[type]
  }
  return { tables, rest: { ...x, rows: rest } }
}

/**
 * COPYs prepared index rows, those of several preparations together (one COPY a table, one table after
 * the other, on the transaction's connection); returns the CTEs of the rest (types not copied, full-text
 * rows) for the caller's statement.
 */
export async function copyIndexRows(tx: TxSql, copies: PreparedIndexCopy[]): Promise<PendingCtes | undefined> {
  for (const [table, t] of copyTables(copies)) await copyText(tx, table, t.columns, t.pieces)
  const ctes = extractedCtes(tx, mergeExtracted(copies.map((c) => c.rest)), [])
  return ctes && { ctes } // wrapped: a fragment is thenable, and a promise resolved with it would run it alone
}

/** The COPY text of several preparations by table, in the order of the preparations. */
export function copyTables(copies: PreparedIndexCopy[]): Map<string, { columns: readonly string[]; pieces: string[] }> {
  const tables = new Map<string, { columns: readonly string[]; pieces: string[] }>()
  for (const c of copies)
    for (const t of c.tables) {
      const into = tables.get(t.table)
      if (into) for (const piece of t.pieces) into.pieces.push(piece)
      else tables.set(t.table, { columns: t.columns, pieces: [...t.pieces] })
    }
  return tables
}
