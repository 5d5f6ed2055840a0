// The SQL of "a patient's everything": the Patient resources chosen by a selector, every current
// resource in their Patient compartments (idx_reference rows on the parameters the Patient
// CompartmentDefinition names), and optionally what those resources reference, one level (HAPI's
// `_include=*`), filtered by type and last-updated time. One statement gives the ordered snapshot:
// the (rid, version) of every member, packed into fixed-width text for the page cache, with a mark on
// the resources that are there only because a member references them (search.mode `include`).
// https://hl7.org/fhir/R4/patient-operation-everything.html
import { type Sql, withCustomPlans } from '../db/client'
import type { Fragment } from '../db/fragments'
import { datePredicate } from '../fhir/search/types/date'
import { patientCompartmentLinks } from '../fhir/search/query/compartment'

/** Which FHIR Patients: by id, by an identifier (the patient API's link), or all of them. */
export type PatientSelector = { kind: 'ids'; ids: string[] } | { kind: 'identifier'; system: string; value: string } | { kind: 'all' }

export interface EverythingFilter {
  /** Resource types to return; all when absent. */
  types?: string[]
  /** Only resources last updated at or after this instant (ISO 8601): FHIR `_since`. */
  since?: string
  /** Only resources last updated strictly after this instant: the patient API's `_since` ("changed after"). */
  after?: string
  /** `_lastUpdated` search values, each one ANDed (`ge2020-01-01`), as in a search. */
  lastUpdated?: string[]
  /** Also the resources the compartment's resources reference, one level. */
  followReferences: boolean
  /**
   * Mark the resources there only by reference (search.mode `include`): the patient API's export. An
   * anti-join with the compartment, left out where nobody reads the mark (FHIR $everything): with it,
   * bench/everything.ts's type level over 13,491 resources took 0.9-1.6 s against 0.57-0.60 s before
   * (a loaded 2-core machine, not re-measured quiet).
   */
  markIncluded?: boolean
}

/** One snapshot entry: 16 hex digits of rid, 8 of version; the version's top bit marks an included resource. */
export const ENTRY_WIDTH = 24
const INCLUDED_BIT = 0x8000_0000

export interface SnapshotEntry {
  rid: string
  version: number
  /** Referenced by a member, not a member itself (search.mode `include`). */
  included: boolean
}

export function decodeEntries(text: string): SnapshotEntry[] {
  const out: SnapshotEntry[] = []
  for (let i = 0; i + ENTRY_WIDTH <= text.length; i += ENTRY_WIDTH) {
    const v = Number.parseInt(text.slice(i + 16, i + ENTRY_WIDTH), 16)
    const included = v >= INCLUDED_BIT
    out.push({ rid: BigInt(`0x${text.slice(i, i + 16)}`).toString(), version: included ? v - INCLUDED_BIT : v, included })
  }
  return out
}

/** A resource of a page as stored: its JSON is sent as is. */
export interface PageResource {
  type: string
  id: string
  content: string
  /** Referenced by a member of the compartment, not a member itself. */
  included: boolean
}

export interface InlineSnapshot {
  /** Patients the selector found (0: unknown or deleted patient). */
  patients: number
  /** False when the compartment is larger than the inline limit: nothing else was computed. */
  inline: boolean
  total: number
  /** The packed (rid, version) list. */
  list: string
  /** The first `count` resources. */
  first: PageResource[]
}

/**
 * The snapshot and its first page in one statement, unless the compartment has more than `inlineMax`
 * index rows (counted with a bounded scan), in which case a worker builds it (`snapshotList`).
 */
export async function inlineSnapshot(pool: Sql, sel: PatientSelector, filter: EverythingFilter, count: number, inlineMax: number): Promise<InlineSnapshot> {
  const rows = await withCustomPlans(
    pool,
    (sql) => sql<any[]>`
    with pat0 as (${selectedPatients(sql, sel)}),
    size as (select count(*)::int as n from (
      select 1 from idx_reference i join pat0 p on i.target_id = p.id where i.target_type = 'Patient' limit ${inlineMax + 1}) x),
    pat as (select * from pat0 where (select n from size) <= ${inlineMax}),
    ${members(sql, filter)}
    select 0::bigint as n, (select count(*) from pat0)::int as patients, (select n from size) as size, (select count(*) from sel)::int as total,
           ${packedList(sql)} as list,
           null::text as res_type, null::text as id, null::text as content, null::boolean as included
    union all
    (select s.n, null, null, null, null, r.res_type, r.id, r.content, s.included
     from sel s join resource r on r.rid = s.rid where s.n <= ${count} order by s.n)
    order by n`,
  )
  const head = rows[0]
  return {
    patients: head.patients,
    inline: head.size <= inlineMax,
    total: head.total,
    list: head.list ?? '',
    first: rows.slice(1).map((r) => ({ type: r.res_type, id: r.id, content: r.content, included: r.included })),
  }
}

/** The whole snapshot (a worker's job for large exports): total and packed list. */
export async function snapshotList(pool: Sql, sel: PatientSelector, filter: EverythingFilter): Promise<{ patients: number; total: number; list: string }> {
  const [row] = await withCustomPlans(
    pool,
    (sql) => sql<any[]>`
    with pat as (${selectedPatients(sql, sel)}),
    ${members(sql, filter)}
    select (select count(*) from pat)::int as patients, (select count(*) from sel)::int as total, ${packedList(sql)} as list`,
  )
  return { patients: row.patients, total: row.total, list: row.list ?? '' }
}

/** The packed (rid, version, included) list of `sel`, in order. */
const packedList = (sql: Sql) =>
  sql`(select string_agg(lpad(to_hex(rid), 16, '0') || lpad(to_hex(version + case when included then ${INCLUDED_BIT}::bigint else 0 end), 8, '0'), '' order by n) from sel)`

/** Exactly these versions, in this order, from `resource` or `resource_history` (an expunged one is skipped). */
export async function readVersions(sql: Sql, entries: SnapshotEntry[]): Promise<PageResource[]> {
  if (entries.length === 0) return []
  const rows = await sql<any[]>`
    select coalesce(r.res_type, h.res_type) as res_type, coalesce(r.id, h.id) as id, coalesce(r.content, h.content) as content, x.inc = 1 as included
    from unnest(${entries.map((e) => e.rid)}::bigint[], ${entries.map((e) => e.version)}::int[], ${entries.map((e) => (e.included ? 1 : 0))}::int[])
      with ordinality as x(rid, version, inc, n)
    left join resource r on r.rid = x.rid and r.version = x.version
    left join resource_history h on r.rid is null and h.rid = x.rid and h.version = x.version
    order by x.n`
  return rows.filter((r) => r.content !== null).map((r) => ({ type: r.res_type, id: r.id, content: r.content, included: r.included }))
}

/** The FHIR Patients a selector names (rid, id). */
export function selectedPatients(sql: Sql, sel: PatientSelector): Fragment {
  if (sel.kind === 'ids') return sql`select r.rid, r.id from resource r where r.res_type = 'Patient' and r.id = any(${sel.ids}::text[]) and not r.deleted`
  if (sel.kind === 'all') return sql`select r.rid, r.id from resource r where r.res_type = 'Patient' and not r.deleted`
  return sql`
    select distinct r.rid, r.id from idx_token t join resource r on r.rid = t.rid
    where t.res_type = 'Patient' and t.code = 'identifier' and t.value = ${sel.value} and t.system = ${sel.system} and not r.deleted`
}

/** The CTE `members`: the Patients of `pat` and every resource in their compartments (rids). */
export function compartmentMembers(sql: Sql): Fragment {
  const links = patientCompartmentLinks()
  return sql`
    members as (
      select rid from pat
      union
      select i.rid from idx_reference i join pat p on i.target_id = p.id
        join unnest(${links.types}::text[], ${links.codes}::text[]) as c(t, code) on c.t = i.res_type and c.code = i.code
      where i.target_type = 'Patient')`
}

/** CTEs `members` (compartment), `reached` (with references) and `sel` (filtered, numbered, included marked); needs `pat`. */
function members(sql: Sql, f: EverythingFilter): Fragment {
  const reached = f.followReferences
    ? sql`reached as (
        select rid from members
        union
        select r.rid from idx_reference i join resource r on r.res_type = i.target_type and r.id = i.target_id
        where i.rid in (select rid from members) and i.target_id is not null and not r.deleted)`
    : sql`reached as (select rid from members)`
  const types = f.types && f.types.length > 0 ? sql`and r.res_type = any(${f.types}::text[])` : sql``
  const since = f.since ? sql`and r.last_updated >= ${f.since}::timestamptz` : sql``
  const after = f.after ? sql`and r.last_updated > ${f.after}::timestamptz` : sql``
  const lastUpdated = (f.lastUpdated ?? []).reduce((acc, v) => sql`${acc} and (${lastUpdatedPredicate(sql, v)})`, sql``)
  return sql`
    ${compartmentMembers(sql)},
    ${reached},
    sel as (
      select r.rid, r.version, ${f.markIncluded && f.followReferences ? sql`not exists (select 1 from members m where m.rid = r.rid)` : sql`false`} as included,
        row_number() over (order by r.res_type <> 'Patient', r.rid) as n
      from resource r where r.rid in (select rid from reached) and not r.deleted ${types} ${since} ${after} ${lastUpdated})`
}

function lastUpdatedPredicate(sql: Sql, value: string): Fragment {
  // comma-separated values are alternatives; https://hl7.org/fhir/R4/search.html#combining
  const ors = value.split(',').map((v) => sql`(${datePredicate(sql, v, '_lastUpdated', { lo: sql`r.last_updated`, hi: sql`r.last_updated` })})`)
  return ors.reduce((acc, p) => sql`${acc} or ${p}`)
}
