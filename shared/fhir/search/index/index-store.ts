// The search index rows of new versions, as CTEs of the write's single statement: rows of superseded
// versions are deleted and the new rows inserted (deleted resources get none).
import type { Sql, TxSql } from '../../../db/client'
import { type Fragment, join } from '../../../db/fragments'
import { textColumns } from '../../../db/text-columns'
import type { Indexable, IndexRowSet, IndexWriter } from '../../repo/collaborators'
import { emptyIndexRows, extractIndexes, type IndexRows } from './extract'
import { contentText, narrativeText } from './fulltext'
import { shapeOf } from './shape'
import { type Keyed, paramType, paramTypes } from '../types'

/**
 * The repository's index writer: keeps every index table in step with the current versions, for writes,
 * $meta changes and reindexing alike. `baseUrl`: absolute references on this base are local ones.
 */
export function indexWriter(baseUrl?: string): IndexWriter {
  return {
    indexRows: (resources, opts) => extractRows(resources, baseUrl, opts?.fulltext ?? true) as unknown as IndexRowSet,
    writeIndexes: (tx, rows, superseded, opts) => extractedCtes(tx, rows as unknown as ExtractedRows, superseded, opts?.keep, opts?.fulltext ?? true),
    countRows: indexRowCounts,
  }
}

/** Index rows of one resource by `table code` (the full-text table has no codes). */
async function indexRowCounts(tx: TxSql, rid: string): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (const table of INDEX_TABLES) {
    if (table === 'idx_fulltext') continue
    const rows = await tx<{ code: string; n: number }[]>`select code, count(*)::int as n from ${tx(table)} where rid = ${rid} group by code`
    for (const r of rows) out.set(`${table} ${r.code}`, r.n)
  }
  return out
}

// The types whose rows are completed once all of a resource's rows are extracted.
const COMPLETING = [...paramTypes()].filter((t) => t.complete !== undefined)

/** The full-text row of a resource, with its search shape (shape.ts). */
type TextRow = { rid: string; resType: string; narrative: string | null; content: string; shape: string }

/** The index rows of resources, extracted (CPU only, no database): what writeIndexes then writes. */
export interface ExtractedRows {
  rows: ReturnType<typeof emptyKeyed>
  text: TextRow[]
  /** Every resource's search shape: written with its full-text row, or into the kept one (no `text`). */
  shapes: { rid: string; shape: string }[]
}

export function extractRows(written: Indexable[], baseUrl?: string, withText = true): ExtractedRows {
  const rows = emptyKeyed()
  const text: ExtractedRows['text'] = []
  const shapes: ExtractedRows['shapes'] = []
  for (const v of written) {
    if (v.deleted || !v.resource) continue
    const r = extractIndexes(v.resource, { baseUrl })
    // Rows that depend on the resource's other rows (token: the Patient it references).
    const byType = r as unknown as Record<string, unknown[]>
    for (const t of COMPLETING) t.complete?.(byType[t.type], byType)
    for (const k of Object.keys(r) as (keyof IndexRows)[]) {
      const target = rows[k] as Keyed<unknown>[]
      // The rows are this extraction's own objects: keyed in place rather than copied.
      for (const row of r[k] as unknown as Keyed<object>[]) {
        row.rid = v.rid
        row.resType = v.type
        target.push(row)
      }
    }
    const shape = shapeOf(v.type, r)
    shapes.push({ rid: v.rid, shape })
    if (withText) text.push({ rid: v.rid, resType: v.type, narrative: narrativeText(v.resource) || null, content: contentText(v.resource), shape })
  }
  return { rows, text, shapes }
}

/** The rows of several extractions as one (each's rows after the one before's). */
export function mergeExtracted(list: ExtractedRows[]): ExtractedRows {
  if (list.length === 1) return list[0]
  const rows = emptyKeyed()
  for (const x of list)
    for (const k of Object.keys(x.rows) as (keyof IndexRows)[]) {
      const into = rows[k] as unknown[]
      for (const row of x.rows[k] as unknown[]) into.push(row)
    }
  return { rows, text: list.flatMap((x) => x.text), shapes: list.flatMap((x) => x.shapes) }
}

/**
 * The second half: the statement's CTEs for extracted rows, keeping only rows of rids in `keep` when
 * given. With `fulltext` false the full-text rows stay as they are (they depend on the content only,
 * not on search parameters, so a reindex of unchanged content need not rebuild them).
 */
export function extractedCtes(tx: TxSql, x: ExtractedRows, superseded: string[], keep?: ReadonlySet<string>, fulltext = true): Fragment | undefined {
  if (!keep) return indexCtes(tx, superseded, x.rows, fulltext ? x.text : x.shapes, fulltext)
  const rows = emptyKeyed()
  for (const k of Object.keys(x.rows) as (keyof IndexRows)[]) (rows[k] as Keyed<unknown>[]) = (x.rows[k] as Keyed<unknown>[]).filter((r) => keep.has(r.rid))
  return indexCtes(
    tx,
    superseded.filter((rid) => keep.has(rid)),
    rows,
    fulltext ? x.text.filter((t) => keep.has(t.rid)) : x.shapes.filter((t) => keep.has(t.rid)),
    fulltext,
  )
}

function emptyKeyed(): { [K in keyof IndexRows]: Keyed<IndexRows[K][number]>[] } {
  return emptyIndexRows() as any
}

/** The CTEs that delete the rows of replaced versions and insert the new rows (empty tables are left out). */
function indexCtes(
  tx: TxSql,
  superseded: string[],
  r: ReturnType<typeof emptyKeyed>,
  text: TextRow[] | ExtractedRows['shapes'],
  fulltext = true,
): Fragment | undefined {
  const parts: Fragment[] = []
  if (superseded.length > 0) {
    for (const table of INDEX_TABLES)
      if (fulltext || table !== 'idx_fulltext') parts.push(tx`${tx(`del_${table}`)} as (delete from ${tx(table)} where rid = any(${superseded}::bigint[]))`)
  }
  // Only tables that get rows appear, so a plain create has few plan nodes. Each table's rows travel as
  // one text parameter per column (text-columns.ts), cast by its type's insert to the column types.
  for (const [type, rows] of Object.entries(r) as [keyof IndexRows, Keyed<unknown>[]][]) {
    if (rows.length === 0) continue
    const insert = paramType(type)?.insert(tx, rows)
    if (insert) parts.push(insert)
  }
  if (fulltext && text.length > 0)
    parts.push(tx`ins_fulltext as (insert into idx_fulltext (rid, res_type, narrative, content, shape)
      select rid::bigint, res_type, nullif(to_tsvector('simple', narrative), ''::tsvector), to_tsvector('simple', content), shape::bigint
      from ${textColumns(tx, text as TextRow[], ['rid', 'resType', 'narrative', 'content', 'shape'])} as x(rid, res_type, narrative, content, shape))`)
  // The full-text rows kept (a reindex): their shapes follow the new rows.
  if (!fulltext && text.length > 0)
    parts.push(tx`upd_shape as (update idx_fulltext f set shape = x.shape::bigint
      from ${textColumns(tx, text, ['rid', 'shape'])} as x(rid, shape) where f.rid = x.rid::bigint)`)
  return parts.length > 0 ? join(tx as unknown as Sql, parts, tx`, `) : undefined
}

/** Every search index table, keyed by rid: each type's, and the full-text one. */
export const INDEX_TABLES = [...[...paramTypes()].map((t) => t.table), 'idx_fulltext']
