// The count of a common token value (`Observation?status=final&_total=accurate`) told from the few
// resources without it: the type's live resources (counts, absent.ts) less those lacking the value,
// found as a sparse `:not` finds its candidates (the rows of the parameter's other values, its rows of
// no code, the shapes without it). Counted directly, every row of the value is read with its heap
// tuple (no page is all-visible before a VACUUM): 63,220 rows, 8,255 buffers on Synthea x10.
import type { Sql } from '../../../db/client'
import { splitEscaped, unescape } from '../escape'
import { storedCodes } from '../registry'
import type { Fragment } from '../types'
import { codeMatch } from './param-sql'
import type { Criterion } from './query'
import { distinctValues, liveResources, shapeRids } from './absent'

/** Other values of the parameter read at most: a value most resources have leaves few others. */
const FEW_VALUES = 20
/**
 * The complement is read when under this share of the type's resources: each of its candidates costs
 * about 5 buffers (its row, then the probe for the value) against about 0.13 a row counted directly,
 * and when it is larger, the candidates read before giving up are wasted (a hundredth of the type).
 */
const SHARE = 100

/**
 * The number of live resources of `type` that `c` matches (a token code without a system: its value in
 * any system), as a scalar expression that is null when the complement is not few (other values, or
 * more than a SHARE of the type's resources lack it): the caller then counts directly. Undefined when
 * `c` is not such a criterion.
 */
export function complementCount(sql: Sql, c: Criterion, type: string): Fragment | undefined {
  if (c.kind !== 'param' || c.def.type !== 'token' || c.modifier !== undefined || c.def.common === 'column' || c.values.length !== 1) return undefined
  const parts = splitEscaped(c.values[0], '|')
  const codes = storedCodes(c.def)
  if (parts.length !== 1 || codes.length !== 1) return undefined
  const value = unescape(parts[0])
  const code = codes[0]
  const rows = sql`m.res_type = ${type} and m.code = ${code}`
  const few = sql`(select count(*) from vals) <= ${FEW_VALUES}`
  const lacking = shapeRids(sql, type, sql`not exists (select 1 from idx_token i where i.rid = rep.rid and ${codeMatch(sql, c.def)} offset 0)`)
  return sql`(with vals as materialized (select v.value from (${distinctValues(sql, type, code)}) v limit ${FEW_VALUES + 1}),
      live as materialized (select x.n, x.n / ${SHARE}::int as budget from (select ${liveResources(sql, type)} as n) x),
      cand as materialized (select x.rid from (
          select m.rid from vals v cross join lateral (select m.rid from idx_token m where ${rows} and m.value = v.value offset 0) m
            where v.value <> ${value}
          union all select m.rid from idx_token m where ${rows} and m.value is null
          union all select l.rid from (${lacking}) l) x
        where ${few} limit (select l.budget from live l))
    select case when ${few} and (select count(*) from cand) < (select l.budget from live l) then
      (select l.n from live l) - (select count(*) from (select distinct rid from cand) c
        where not exists (select 1 from idx_token i where i.rid = c.rid and i.res_type = ${type} and ${codeMatch(sql, c.def)} and i.value = ${value} offset 0))
      end)`
}
