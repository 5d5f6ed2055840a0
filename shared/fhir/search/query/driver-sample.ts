// Which of several common drivers a sparse bounded page (bounded.ts) reads its candidates from. Their
// index rows were counted only up to the drive budget; SAMPLE of each driver's rows (already read, and
// spread over them: the first ones are a few patients', a token's rows being in patient order; ten
// copies of one patient gave code=2085-9 no woman) are checked against every other criterion, and the
// driver whose sampled rows match most often drives: the matches are the same whichever reads them, so
// the driver with the most matches among its rows has the fewest rows (|k| = matches / share_k), and
// fills a page with the fewest probes; ties go to the likeliest (compile.ts driverCandidates). When
// under MIN_MATCHES of every sample match, the sizes are not told apart and the candidates would mostly
// be probed in vain (6 buffers each): pick is -1, and the drivers' rids are intersected instead. A fixed
// cost, whatever the planner knows. A sample of the type's resources spread over its rid range was
// tried: the first resource after each point is the first of a patient's block, not a fair draw
// (8302-2, 6% of Observations, met 62% of them).
import type { Sql } from '../../../db/client'
import { join } from '../../../db/fragments'
import type { Fragment } from '../types'

/**
 * Rows of each driver checked against the other criteria, spread over the budget's rows by a
 * multiplicative hash of their position (a fixed stride would alias with periodic data: every 10th
 * row of a code whose every 10th row matches is all or none).
 */
export const SAMPLE = 100
/** Matches in a driver's sample for it to drive (5%: a page of 20 within about 400 probes). */
const MIN_MATCHES = 5

/**
 * The WITH entry `pick` (`pick.k`: the index of the driver to read, or -1 for the intersection), from
 * each driver's `budget` rows already read (`rows(k)`, a relation of `rid`, or undefined when they are
 * not the type's rids) and the condition that every criterion but that driver holds for the resource of a
 * sampled `s.rid` (`others(k)`).
 */
export function driverPick(sql: Sql, count: number, budget: number, rows: (k: number) => Fragment | undefined, others: (k: number) => Fragment): Fragment {
  const met = Array.from({ length: count }, (_, k) => {
    const sampled = rows(k)
    const share = sampled
      ? sql`(select count(*) from (select s.rid from (select d.rid, row_number() over () as n from ${sampled} d) s
          where s.n * 7919 % ${budget}::int < ${SAMPLE}::int) s where ${others(k)})`
      : sql`-1`
    return sql`(${k}::int, ${share})`
  })
  return sql`pick as materialized (select coalesce((select v.k from (values ${join(sql, met, sql`, `)}) v(k, n)
    where v.n >= ${MIN_MATCHES}::int order by v.n desc, v.k limit 1), -1) as k)`
}
