// The resources an export writes, one keyset page at a time in rid order (one pass over every type: a
// row goes to its type's file), each as it was at transactionTime while writes continue: a resource
// whose current version is not later than that instant is read as it is, with its index rows for the
// filters; one written since is read from its history (the latest version not later than the instant,
// none when it did not exist yet or was deleted). Its compartment membership is checked on that version
// by the caller; its _typeFilter on its current index rows (the only ones kept): a resource changed
// during the export is filtered as it is now.
// https://hl7.org/fhir/uv/bulkdata/STU2/export.html (transactionTime: "SHALL include any matching
// resources modified up to and including this instant")
import type { Sql, TxSql } from '../db/client'
import { type Fragment, join } from '../db/fragments'
import { patientCompartmentLinks } from '../fhir/search/query/compartment'
import { parseSearch } from '../fhir/search/query/parse'
import { searchWhere } from '../fhir/search/query/execute'
import { prepareTerminologyCriteria } from '../fhir/search/query/terminology-criteria'
import type { ExportParams } from './export-request'

export interface ScanRow {
  rid: string
  type: string
  id: string
  content: string
  /** Read from history: written after transactionTime, its compartment membership not yet checked. */
  changed: boolean
}

/**
 * A row of a page: the text of a large one (over LARGE_ROW_BYTES) is not read with the page (null), but
 * in slices of its version (`slices`).
 */
export interface PageRow extends Omit<ScanRow, 'content'> {
  content: string | null
  /** The stored text's size in bytes. */
  size: number
  /** The version the row is as of transactionTime. */
  version: string
}

/** A keyset page: its rows, and whether rows may follow (it was cut by its count or by its bytes). */
export interface ScanPage {
  rows: PageRow[]
  more: boolean
}

/** Rows whose stored text is larger than this are read in slices, never with their page (export-job.ts). */
export const LARGE_ROW_BYTES = 8 * 1024 * 1024
/** The bytes of one slice of a large row's text. */
const SLICE_BYTES = 4 * 1024 * 1024

export interface ExportScan {
  /**
   * The rows after the rid `after`: up to `limit` of them, and no more once their stored text reaches
   * `maxBytes` (the row that reaches it included, so a page always has one when any is left).
   */
  page(after: string, limit: number, maxBytes: number): Promise<ScanPage>
  /**
   * The text stored for a row at its version (current or in history), in slices of SLICE_BYTES read one
   * at a time, `last` on the final one; a character a slice's end cuts is completed by the next. Throws
   * when that version is gone (expunged meanwhile). By bytes, not characters: PostgreSQL finds a
   * character position by reading the text up to it (a slice at 36 million characters of a 40 MB text
   * took 240 ms, at 38 MB of bytes 51 ms).
   */
  slices(row: Pick<PageRow, 'rid' | 'version'>, tx?: TxSql): AsyncGenerator<{ text: string; last: boolean }>
  /** Every row of `type` with a rid in (after, upTo]. */
  range(type: string, after: string, upTo: string): Promise<ScanRow[]>
  /** The rows of these rids as a page has them: a large one without its text. */
  sized(rids: string[]): Promise<PageRow[]>
  /** Resources of the export's types with a rid up to `upTo` whose current version is from `lateFrom` on. */
  lateRows(lateFrom: string, upTo: string): Promise<{ rid: string; type: string }[]>
}

/**
 * The scan of an export: `types` are the types to read, `transactionTime` the instant the export is
 * consistent at, `baseUrl` the base its filters' references are read against.
 */
export async function exportScan(sql: Sql, p: ExportParams, types: readonly string[], transactionTime: string, baseUrl: string): Promise<ExportScan> {
  const filters = await typeFilters(sql, p.typeFilters, baseUrl)
  const T = transactionTime
  const select = (where: Fragment, limit?: number): Fragment => {
    const r = sql('r0')
    const since = p.since ? sql`and ${r}.last_updated > ${p.since}::timestamptz` : sql``
    const sinceThen = p.since ? sql`and h.last_updated > ${p.since}::timestamptz` : sql``
    const filtered = filters.length > 0 ? sql`and ${typeFilterMatch(sql, filters)}` : sql``
    const members = p.level === 'system' ? sql`` : sql`and ${compartmentMatch(sql, p.patients)}`
    // The history of a row is read only when its current version is later than the instant (the
    // condition on r0 inside the lateral subquery is a one-time filter of it).
    return sql`
        select ${r}.rid::text, ${r}.res_type as type, ${r}.id,
          case when ${r}.last_updated <= ${T}::timestamptz then ${r}.content else h.content end as content,
          ${r}.last_updated > ${T}::timestamptz as changed, ${r}.rid as k,
          case when ${r}.last_updated <= ${T}::timestamptz then ${r}.version else h.version end as version
        from resource ${r}
        left join lateral (
          select h.content, h.last_updated, h.version from resource_history h
          where h.rid = ${r}.rid and ${r}.last_updated > ${T}::timestamptz and h.last_updated <= ${T}::timestamptz
          order by h.version desc limit 1
        ) h on true
        where ${where}
          and ((${r}.last_updated <= ${T}::timestamptz and not ${r}.deleted ${since} ${filtered} ${members})
            or (${r}.last_updated > ${T}::timestamptz and h.content is not null ${sinceThen} ${filtered}))
        order by ${r}.rid
        ${limit === undefined ? sql`` : sql`limit ${limit}`}`
  }
  const ofTypes = () => sql`r0.res_type = any(${types as string[]}::text[])`
  /**
   * The rows `where` selects as a page has them: each text's size and the running size in rid order
   * (octet_length reads a stored, compressed or out-of-line, value's size from its header), a large row
   * without its text, and with `maxBytes` none past the row whose running size reaches it, so that the
   * rows past a page's budget are never decompressed or sent.
   */
  const sized = (where: Fragment, limit?: number, maxBytes?: number) =>
    sql<(PageRow & { run: string })[]>`
      select p.rid, p.type, p.id, p.changed, p.version::text, p.run::text, p.size::int,
        case when p.size > ${LARGE_ROW_BYTES} then null else p.content end as content
      from (
        select s.*, octet_length(s.content) as size, sum(octet_length(s.content)) over (order by s.k) as run
        from (${select(where, limit)}) s
      ) p
      ${maxBytes === undefined ? sql`` : sql`where p.run - p.size < ${maxBytes}`}
      order by p.k`
  return {
    async page(after, limit, maxBytes) {
      // Counted by rows only, a page of 2,000 large resources (DocumentReferences with their attachments
      // inline: 16 MB each is a valid import line) was held whole, twice (the next page is read while one
      // is written).
      const rows = await sized(sql`r0.rid > ${after}::bigint and ${ofTypes()}`, limit, maxBytes)
      const last = rows[rows.length - 1]
      const more = rows.length === limit || (last !== undefined && Number(last.run) >= maxBytes)
      return { rows, more }
    },
    async *slices(row, tx) {
      const q = (tx ?? sql) as Sql
      const decoder = new TextDecoder('utf-8', { fatal: true })
      for (let from = 1; ; from += SLICE_BYTES) {
        const [slice] = await q<{ part: Uint8Array }[]>`
          select substring(convert_to(v.content, 'UTF8') from ${from}::int for ${SLICE_BYTES}::int) as part from (
            select content from resource where rid = ${row.rid}::bigint and version = ${row.version}::int
            union all
            select content from resource_history where rid = ${row.rid}::bigint and version = ${row.version}::int
          ) v limit 1`
        if (!slice) throw new Error(`export: version ${row.version} of resource ${row.rid} is gone`)
        const last = slice.part.length < SLICE_BYTES
        yield { text: decoder.decode(slice.part, { stream: !last }), last }
        if (last) return
      }
    },
    range: (type, after, upTo) => sql<ScanRow[]>`${select(sql`r0.rid > ${after}::bigint and r0.rid <= ${upTo}::bigint and r0.res_type = ${type}`)}`,
    sized: (rids) => sized(sql`r0.rid = any(${rids}::bigint[]) and ${ofTypes()}`),
    lateRows: (lateFrom, upTo) =>
      sql<{ rid: string; type: string }[]>`
        select rid::text, res_type as type from resource r0
        where last_updated >= ${lateFrom}::timestamptz and rid <= ${upTo}::bigint and ${ofTypes()}`,
  }
}

interface TypeFilter {
  type: string
  where: Fragment
}

/**
 * Each `_typeFilter` as the WHERE of its search over `resource r0` (types, not deleted, criteria). The
 * kick-off compiles them too (export-kickoff.ts), so that what the compiler refuses (an unknown modifier,
 * a bad value, an unknown ValueSet) is its 400, not the job's failure.
 */
export async function typeFilters(sql: Sql, raw: string[], baseUrl: string): Promise<TypeFilter[]> {
  const out: TypeFilter[] = []
  for (const f of raw) {
    const q = f.indexOf('?')
    const type = f.slice(0, q)
    const query = parseSearch([type], new URLSearchParams(f.slice(q + 1)), { defaultCount: 1, maxCount: 1 })
    await prepareTerminologyCriteria(sql, query.criteria)
    out.push({ type, where: searchWhere(sql, query, baseUrl) })
  }
  return out
}

/**
 * A type with filters is exported when one of them matches (they are ORed, IG "_typeFilter"); a type
 * without any is exported whole.
 */
function typeFilterMatch(sql: Sql, filters: TypeFilter[]): Fragment {
  const filteredTypes = [...new Set(filters.map((f) => f.type))]
  const matches = filters.map((f) => sql`(${f.where})`)
  return sql`(r0.res_type <> all(${filteredTypes}::text[]) or ${join(sql, matches, sql` or `)})`
}

/**
 * In the compartment of a patient (of one of `patients` when given): the Patient itself, or a resource
 * referencing it through one of the parameters the Patient CompartmentDefinition names for its type.
 */
function compartmentMatch(sql: Sql, patients: string[] | undefined): Fragment {
  const { types, codes } = patientCompartmentLinks()
  const self = patients ? sql`(r0.res_type = 'Patient' and r0.id = any(${patients}::text[]))` : sql`r0.res_type = 'Patient'`
  const target = patients ? sql`and i.target_id = any(${patients}::text[])` : sql``
  return sql`(${self} or exists (
    select 1 from idx_reference i join unnest(${types}::text[], ${codes}::text[]) as c(t, code) on c.t = i.res_type and c.code = i.code
    where i.rid = r0.rid and i.target_type = 'Patient' ${target}))`
}
