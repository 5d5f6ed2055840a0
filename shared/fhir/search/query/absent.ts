// The candidates of a sparse negation (`:missing`, token `:not`) of a one-type search, read through the
// resources' search shapes (index/shape.ts, idx_fulltext.shape) rather than as every resource of the type less the index
// rows of the parameter, which read all 63,220 Observations of Synthea x10 for an empty answer (issue 23,
// `Observation?status:not=final`). The candidates hold every match (some may not match: bounded.ts still
// probes the criterion on each), and are few when the matches are:
//   - `:missing=true` / `:missing=false`: the resources of the shapes without / with the parameter; a
//     shape is told by one of its resources (all of them have rows for the same parameters);
//   - token `:not=a,b`: the resources with a row of another value (the distinct values of the parameter,
//     one descent of the lookup index each, less the codes named without a system), with a row of no
//     code, and those of the shapes without the parameter.
// https://hl7.org/fhir/R4/search.html#modifiers
import type { Sql } from '../../../db/client'
import { join } from '../../../db/fragments'
import { splitEscaped, unescape } from '../escape'
import { shapeRange } from '../shape-key'
import { storedCodes } from '../registry'
import { handlerFor } from '../types'
import type { Fragment } from '../types'
import type { Criterion } from './query'
import { codeMatch } from './param-sql'

/** Distinct values of a parameter read for a `:not` before its set is taken as the type's rids less the excluded rows. */
const VALUE_BUDGET = 200

/**
 * The rids (`select ... rid`, possibly repeated) of a superset of `c`'s matches among `type`, or
 * undefined. `fallback` is the exact set the old way (the type's rids less the excluded rows): a `:not`
 * on a parameter of more than VALUE_BUDGET values (an identifier: each resource has its own, and every
 * resource is a candidate) takes it rather than read every value (268 ms for an EOB identifier).
 */
export function negationCandidates(sql: Sql, c: Criterion, type: string, fallback: Fragment): Fragment | undefined {
  if (c.kind === 'missing') {
    const h = handlerFor(c.def.type)
    if (c.def.common === 'column' || !h) return undefined
    return shapeRids(
      sql,
      type,
      sql`${c.missing ? sql`not` : sql``} exists (select 1 from ${sql(h.table)} i where i.rid = rep.rid and ${codeMatch(sql, c.def)} offset 0)`,
    )
  }
  if (c.kind !== 'param' || c.modifier !== 'not' || c.def.type !== 'token' || c.def.common === 'column') return undefined
  const codes = storedCodes(c.def)
  if (codes.length !== 1) return undefined
  const code = codes[0]
  // Rows whose value is a code named without a system match it whatever their system: their resources
  // are no match. `system|code` and `|code` rows may differ by system: their values stay candidates.
  const named = c.values.map((v) => splitEscaped(v, '|')).flatMap((parts) => (parts.length === 1 ? [unescape(parts[0])] : []))
  const few = sql`(select n.n <= ${VALUE_BUDGET} from nvals n)`
  const others = sql`select m.rid from vals v
    cross join lateral (select m.rid from idx_token m where m.res_type = ${type} and m.code = ${code} and m.value = v.value offset 0) m
    where ${few} and v.value <> all(${named}::text[])`
  const noCode = sql`select m.rid from idx_token m where m.res_type = ${type} and m.code = ${code} and m.value is null and ${few}`
  // Too many values: when every resource with the parameter has a row of a named code (every EOB has
  // the identifier 99999999999 beside its own), the matches are those without the parameter, which the
  // counts tell without the type's rids: its live resources (resource_count less its tombstones) less
  // those lacking the parameter less those with a named code. Else the exact set.
  const covered = sql`(select ok from covered)`
  const lacking = sql`select l.rid from lack l where ${few} or ${covered}`
  const exact = sql`select f.rid from (${fallback}) f where not ${few} and not ${covered}`
  return sql`with vals as materialized (select v.value from (${distinctValues(sql, type, code)}) v limit ${VALUE_BUDGET + 1}),
      nvals as materialized (select count(*) as n from vals),
      lack as materialized (${shapeRids(sql, type, sql`not exists (select 1 from idx_token i where i.rid = rep.rid and ${codeMatch(sql, c.def)} offset 0)`)}),
      covered as materialized (select
        ${liveResources(sql, type)}
        - (select count(*) from lack)
        - (select count(distinct i.rid) from idx_token i where i.res_type = ${type} and i.code = ${code} and i.value = any(${named}::text[])) = 0 as ok)
    ${join(sql, [others, noCode, lacking, exact], sql` union all `)}`
}

/** The number of live resources of `type`, from the counts (resource_count less its tombstones). */
export function liveResources(sql: Sql, type: string): Fragment {
  return sql`((select coalesce(sum(k.n), 0) from resource_count k where k.res_type = ${type})::bigint
    - (select count(*) from resource x where x.res_type = ${type} and x.deleted))`
}

/**
 * The distinct non-null values of the token rows (type, code), smallest first, each with the rid of one
 * of its rows: a recursive skip scan, one descent of idx_token_lookup (res_type, code, value, ...) each.
 */
export function distinctValues(sql: Sql, type: string, code: string): Fragment {
  const first = (after: Fragment) =>
    sql`select i.value, i.rid from idx_token i where i.res_type = ${type} and i.code = ${code} and ${after} order by i.value limit 1`
  return sql`with recursive v(value, rid) as (
      (${first(sql`i.value is not null`)})
      union all
      select n.value, n.rid from v cross join lateral (${first(sql`i.value > v.value`)}) n)
    select v.value, v.rid from v`
}

/**
 * The rids of the resources of `type` whose shape meets `test` (a condition on `rep.rid`, one resource
 * of the shape): a skip scan over the shapes of the type (idx_fulltext_shape), then each one's rids.
 */
export function shapeRids(sql: Sql, type: string, test: Fragment): Fragment {
  const { lo, hi } = shapeRange(type)
  const first = (after: Fragment) =>
    sql`select f.shape, f.rid, f.res_type from idx_fulltext f where ${after} and f.shape < ${hi}::bigint order by f.shape limit 1`
  return sql`select unnest(m.rids) as rid from (with recursive v(shape, rid, res_type) as (
        (${first(sql`f.shape >= ${lo}::bigint`)})
        union all
        select n.shape, n.rid, n.res_type from v cross join lateral (${first(sql`f.shape > v.shape`)}) n)
      select rep.shape from v rep where rep.res_type = ${type} and ${test}) s
    cross join lateral (${shapeMembers(sql)}) m`
}

/** Rids of one shape's resources read at a time (shapeMembers). */
const MEMBER_BATCH = 100

// The rids of the resources of shape `s.shape`, as arrays of MEMBER_BATCH in rid order, each batch one
// range of idx_fulltext_shape after the last: a plain `shape = s.shape` was read with a sequential scan
// of idx_fulltext when the statistics (or their absence) made a shape look like a third of the table.
// The shape is a range (one value), not an equality, so that the order (shape, rid) is the shape key's
// alone: with `shape =`, the order was by rid alone, and the rid key was read in order, every resource
// of the table filtered (a shape looks like a third of the table), to find the one of a rare shape.
function shapeMembers(sql: Sql): Fragment {
  const batch = (after: Fragment) => sql`select max(x.rid) as last, count(*) as n, array_agg(x.rid) as rids from (
      select m.rid from idx_fulltext m where (m.shape, m.rid) > (s.shape, ${after}::bigint) and m.shape <= s.shape
      order by m.shape, m.rid limit ${MEMBER_BATCH}) x`
  return sql`with recursive w(last, n, rids) as (
      ${batch(sql`0`)}
      union all
      select b.last, b.n, b.rids from w cross join lateral (${batch(sql`w.last`)}) b where w.n = ${MEMBER_BATCH})
    select w.rids from w`
}
