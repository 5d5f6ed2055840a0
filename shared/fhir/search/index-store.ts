// The search index rows of new versions, as CTEs of the write's single statement: rows of superseded
// versions are deleted and the new rows inserted (deleted resources get none).
import type { Sql, TxSql } from '../../db/client'
import { type Fragment, join } from '../../db/fragments'
import { textColumns } from '../../db/text-columns'
import type { Indexable, IndexRowSet, IndexWriter } from '../repo/collaborators'
import { emptyIndexRows, extractIndexes, type IndexRows } from './extract'
import { contentText, narrativeText } from './fulltext'
import type { CompositeRow } from './types/composite'
import { referencedPatient } from './types/reference'

type Keyed<T> = T & { rid: string; resType: string }

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

/** The index rows of resources, extracted (CPU only, no database): what writeIndexes then writes. */
export interface ExtractedRows {
  rows: ReturnType<typeof emptyKeyed>
  text: { rid: string; resType: string; narrative: string | null; content: string }[]
}

export function extractRows(written: Indexable[], baseUrl?: string, withText = true): ExtractedRows {
  const rows = emptyKeyed()
  const text: ExtractedRows['text'] = []
  for (const v of written) {
    if (v.deleted || !v.resource) continue
    const r = extractIndexes(v.resource, { baseUrl })
    // Token rows carry the Patient the resource references, so that a search by patient and code
    // finds its rows in one index range (compile.ts).
    const patient = referencedPatient(r.reference)
    for (const row of r.token) row.patient = patient
    for (const k of Object.keys(r) as (keyof IndexRows)[]) {
      const target = rows[k] as Keyed<unknown>[]
      // The rows are this extraction's own objects: keyed in place rather than copied.
      for (const row of r[k] as unknown as Keyed<object>[]) {
        row.rid = v.rid
        row.resType = v.type
        target.push(row)
      }
    }
    if (withText) text.push({ rid: v.rid, resType: v.type, narrative: narrativeText(v.resource) || null, content: contentText(v.resource) })
  }
  return { rows, text }
}

/**
 * The second half: the statement's CTEs for extracted rows, keeping only rows of rids in `keep` when
 * given. With `fulltext` false the full-text rows stay as they are (they depend on the content only,
 * not on search parameters, so a reindex of unchanged content need not rebuild them).
 */
export function extractedCtes(tx: TxSql, x: ExtractedRows, superseded: string[], keep?: ReadonlySet<string>, fulltext = true): Fragment | undefined {
  if (!keep) return indexCtes(tx, superseded, x.rows, x.text, fulltext)
  const rows = emptyKeyed()
  for (const k of Object.keys(x.rows) as (keyof IndexRows)[]) (rows[k] as Keyed<unknown>[]) = (x.rows[k] as Keyed<unknown>[]).filter((r) => keep.has(r.rid))
  return indexCtes(
    tx,
    superseded.filter((rid) => keep.has(rid)),
    rows,
    x.text.filter((t) => keep.has(t.rid)),
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
  text: { rid: string; resType: string; narrative: string | null; content: string }[],
  fulltext = true,
): Fragment | undefined {
  const comp = r.composite.map(compositeColumns).filter((c): c is CompositeColumns => c !== undefined)
  const parts: Fragment[] = []
  if (superseded.length > 0) {
    for (const table of INDEX_TABLES)
      if (fulltext || table !== 'idx_fulltext') parts.push(tx`${tx(`del_${table}`)} as (delete from ${tx(table)} where rid = any(${superseded}::bigint[]))`)
  }
  // Only tables that get rows appear, so a plain create has few plan nodes. Each table's rows travel as
  // one text parameter per column (text-columns.ts), cast here to the column types.
  if (r.string.length > 0)
    parts.push(tx`ins_string as (insert into idx_string (rid, res_type, code, value_norm, value_exact)
      select rid::bigint, res_type, code, value_norm, value_exact
      from ${textColumns(tx, r.string, ['rid', 'resType', 'code', 'value_norm', 'value_exact'])} as x(rid, res_type, code, value_norm, value_exact))`)
  if (r.token.length > 0)
    parts.push(tx`ins_token as (insert into idx_token (rid, res_type, code, system, value, text_norm, patient)
      select rid::bigint, res_type, code, system, value, text_norm, patient
      from ${textColumns(tx, r.token, ['rid', 'resType', 'code', 'system', 'value', 'text', 'patient'])} as x(rid, res_type, code, system, value, text_norm, patient))`)
  if (r.reference.length > 0)
    parts.push(tx`ins_reference as (insert into idx_reference (rid, res_type, code, target_type, target_id, target_version, url, identifier_system, identifier_value)
      select rid::bigint, res_type, code, target_type, target_id, target_version, url, identifier_system, identifier_value
      from ${textColumns(tx, r.reference, ['rid', 'resType', 'code', 'targetType', 'targetId', 'version', 'url', 'identifierSystem', 'identifierValue'])}
        as x(rid, res_type, code, target_type, target_id, target_version, url, identifier_system, identifier_value))`)
  if (r.date.length > 0)
    parts.push(tx`ins_date as (insert into idx_date (rid, res_type, code, lo, hi, lo_day, hi_day)
      select rid::bigint, res_type, code, lo::timestamptz, hi::timestamptz, lo_day::date, hi_day::date
      from ${textColumns(tx, r.date, ['rid', 'resType', 'code', 'lo', 'hi', 'loDay', 'hiDay'])} as x(rid, res_type, code, lo, hi, lo_day, hi_day))`)
  if (r.number.length > 0)
    parts.push(tx`ins_number as (insert into idx_number (rid, res_type, code, value, lo, hi)
      select rid::bigint, res_type, code, value::numeric, lo::numeric, hi::numeric
      from ${textColumns(tx, r.number, ['rid', 'resType', 'code', 'value', 'lo', 'hi'])} as x(rid, res_type, code, value, lo, hi))`)
  if (r.quantity.length > 0)
    parts.push(tx`ins_quantity as (insert into idx_quantity (rid, res_type, code, value, lo, hi, system, unit_code, unit)
      select rid::bigint, res_type, code, value::numeric, lo::numeric, hi::numeric, system, unit_code, unit
      from ${textColumns(tx, r.quantity, ['rid', 'resType', 'code', 'value', 'lo', 'hi', 'system', 'unitCode', 'unit'])} as x(rid, res_type, code, value, lo, hi, system, unit_code, unit))`)
  if (r.uri.length > 0)
    parts.push(tx`ins_uri as (insert into idx_uri (rid, res_type, code, value)
      select rid::bigint, res_type, code, value
      from ${textColumns(tx, r.uri, ['rid', 'resType', 'code', 'value'])} as x(rid, res_type, code, value))`)
  if (comp.length > 0)
    parts.push(tx`ins_composite as (insert into idx_composite (rid, res_type, code, system1, value1, system2, value2, lo2, hi2, unit2, dlo2, dhi2)
      select rid::bigint, res_type, code, system1, value1, system2, value2, lo2::numeric, hi2::numeric, unit2, dlo2::timestamptz, dhi2::timestamptz
      from ${textColumns(tx, comp, ['rid', 'resType', 'code', 'system1', 'value1', 'system2', 'value2', 'lo2', 'hi2', 'unit2', 'dlo2', 'dhi2'])}
        as x(rid, res_type, code, system1, value1, system2, value2, lo2, hi2, unit2, dlo2, dhi2))`)
  if (fulltext && text.length > 0)
    parts.push(tx`ins_fulltext as (insert into idx_fulltext (rid, res_type, narrative, content)
      select rid::bigint, res_type, nullif(to_tsvector('simple', narrative), ''::tsvector), to_tsvector('simple', content)
      from ${textColumns(tx, text, ['rid', 'resType', 'narrative', 'content'])} as x(rid, res_type, narrative, content))`)
  return parts.length > 0 ? join(tx as unknown as Sql, parts, tx`, `) : undefined
}

/** Every search index table, keyed by rid. */
export const INDEX_TABLES = ['idx_string', 'idx_token', 'idx_reference', 'idx_date', 'idx_number', 'idx_quantity', 'idx_uri', 'idx_composite', 'idx_fulltext']

interface CompositeColumns {
  rid: string
  resType: string
  code: string
  system1: string | null
  value1: string | null
  system2: string | null
  value2: string | null
  lo2: number | null
  hi2: number | null
  unit2: string | null
  dlo2: string | null
  dhi2: string | null
}

/** A two-part composite (first part a token) in the columns of its second part's kind; others are not indexed. */
function compositeColumns(row: Keyed<CompositeRow>): CompositeColumns | undefined {
  if (row.parts.length !== 2 || row.parts[0].type !== 'token') return undefined
  const first = row.parts[0].row as any
  const second = row.parts[1]
  const s = second.row as any
  const out: CompositeColumns = {
    rid: row.rid,
    resType: row.resType,
    code: row.code,
    system1: first.system,
    value1: first.value,
    system2: null,
    value2: null,
    lo2: null,
    hi2: null,
    unit2: null,
    dlo2: null,
    dhi2: null,
  }
  switch (second.type) {
    case 'token':
      return { ...out, system2: s.system, value2: s.value }
    case 'string':
      return { ...out, value2: s.value_norm }
    case 'uri':
      return { ...out, value2: s.value }
    case 'number':
      return { ...out, lo2: s.lo, hi2: s.hi }
    case 'quantity':
      return { ...out, lo2: s.lo, hi2: s.hi, system2: s.system, unit2: s.unitCode ?? s.unit }
    case 'date':
      return { ...out, dlo2: s.lo, dhi2: s.hi }
    default:
      return undefined
  }
}
