// The index rows of new resources written with COPY (db/copy-rows.ts) rather than as CTEs of the write's
// statement (index-store.ts): a bulk import's fresh resources, which have no earlier rows to delete. The
// columns of each table below are those its type's `insert` (types/<type>.ts) fills, in the same order,
// from the same row properties; tests/bulk-import-copy.test.ts compares every index row written both
// ways. A type not listed here (composite, whose rows are reshaped first, or a new one) keeps its CTE, as
// do the full-text rows (to_tsvector, which COPY cannot call): those CTEs are returned for the caller's
// statement.
import type { TxSql } from '../../../db/client'
import { copyRows } from '../../../db/copy-rows'
import type { IndexRowSet, IndexWriter, PendingCtes } from '../../repo/collaborators'
import { type ExtractedRows, extractedCtes, indexWriter } from './index-store'

/** The repository's index writer (index-store.ts) that can also COPY the rows of new resources. */
export function copyingIndexWriter(baseUrl?: string): IndexWriter {
  return { ...indexWriter(baseUrl), copyIndexes: (tx: TxSql, rows: IndexRowSet) => copyIndexRows(tx, rows as unknown as ExtractedRows) }
}

type RowsOf = ExtractedRows['rows']

/** Per type: its table, its columns, and the properties of an extracted row that give them. */
const COPIED: Partial<Record<keyof RowsOf, { table: string; columns: string[]; keys: string[] }>> = {
  string: {
    table: 'idx_string',
    columns: ['rid', 'res_type', 'code', 'value_norm', 'value_exact'],
    keys: ['rid', 'resType', 'code', 'value_norm', 'value_exact'],
  },
  token: {
    table: 'idx_token',
    columns: ['rid', 'res_type', 'code', 'system', 'value', 'text_norm', 'patient'],
    keys: ['rid', 'resType', 'code', 'system', 'value', 'text', 'patient'],
  },
  reference: {
    table: 'idx_reference',
    columns: ['rid', 'res_type', 'code', 'target_type', 'target_id', 'target_version', 'url', 'identifier_system', 'identifier_value'],
    keys: ['rid', 'resType', 'code', 'targetType', 'targetId', 'version', 'url', 'identifierSystem', 'identifierValue'],
  },
  date: {
    table: 'idx_date',
    columns: ['rid', 'res_type', 'code', 'lo', 'hi', 'lo_day', 'hi_day'],
    keys: ['rid', 'resType', 'code', 'lo', 'hi', 'loDay', 'hiDay'],
  },
  number: { table: 'idx_number', columns: ['rid', 'res_type', 'code', 'value', 'lo', 'hi'], keys: ['rid', 'resType', 'code', 'value', 'lo', 'hi'] },
  quantity: {
    table: 'idx_quantity',
    columns: ['rid', 'res_type', 'code', 'value', 'lo', 'hi', 'system', 'unit_code', 'unit'],
    keys: ['rid', 'resType', 'code', 'value', 'lo', 'hi', 'system', 'unitCode', 'unit'],
  },
  uri: { table: 'idx_uri', columns: ['rid', 'res_type', 'code', 'value'], keys: ['rid', 'resType', 'code', 'value'] },
}

/**
 * COPYs the index rows of resources that had none (one table after the other, on the transaction's
 * connection); returns the CTEs of the rest (types not copied, full-text rows) for the caller's statement.
 */
export async function copyIndexRows(tx: TxSql, x: ExtractedRows): Promise<PendingCtes | undefined> {
  const rest = {} as RowsOf
  for (const type of Object.keys(x.rows) as (keyof RowsOf)[]) {
    const spec = COPIED[type]
    if (spec) await copyRows(tx, spec.table, spec.columns, x.rows[type] as object[], spec.keys)
    ;(rest[type] as unknown[]) = spec ? [] : x.rows[type]
  }
  const ctes = extractedCtes(tx, { rows: rest, text: x.text }, [])
  return ctes && { ctes } // wrapped: a fragment is thenable, and a promise resolved with it would run it alone
}
