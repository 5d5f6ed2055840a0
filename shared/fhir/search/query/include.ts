// _include and _revinclude for one page of matches: targets of the named reference parameters, and
// resources referring to the matches. Non-iterating ones run once on the matches; :iterate ones repeat
// on what was added until nothing new comes (HAPI's order: revincludes, then includes), capped per page
// (MAX_INCLUDED_RESOURCES; HAPI caps silently, here the cut is reported for the Bundle to say so).
// https://hl7.org/fhir/R4/search.html#include
import type { Sql } from '../../../db/client'
import { type SearchMatch, toMatch } from './match'
import type { IncludeSpec, SearchQuery } from './query'

/** HAPI's maximumIncludesToLoadPerPage default, when the query names no limit (MAX_INCLUDED_RESOURCES). */
export const DEFAULT_MAX_INCLUDED = 1000
const MAX_ROUNDS = 10

export interface Included {
  matches: SearchMatch[]
  /** More would have been included than the limit allows: the page carries the first `limit`. */
  cut?: { limit: number }
}

export async function loadIncludes(sql: Sql, q: SearchQuery, matches: SearchMatch[]): Promise<Included> {
  if (matches.length === 0 || (q.include.length === 0 && q.revinclude.length === 0)) return { matches: [] }
  const limit = q.maxIncluded ?? DEFAULT_MAX_INCLUDED
  const seen = new Set(matches.map((m) => m.rid))
  const out: SearchMatch[] = []
  let cut = false
  const add = (rows: SearchMatch[]) => {
    const fresh = rows.filter((r) => !seen.has(r.rid))
    for (const r of fresh) seen.add(r.rid)
    if (fresh.length > limit - out.length) cut = true
    out.push(...fresh.slice(0, limit - out.length))
    return fresh
  }
  const once = (specs: IncludeSpec[], iterate: boolean) => specs.filter((s) => s.iterate === iterate)
  // One more row than the limit is read: it tells a cut from an exact fit.
  add(await revincluded(sql, once(q.revinclude, false), matches, limit + 1))
  add(await included(sql, once(q.include, false), matches, limit + 1))
  let frontier = out.length > 0 ? out.slice() : []
  const iterRev = once(q.revinclude, true)
  const iterInc = once(q.include, true)
  if (iterRev.length + iterInc.length > 0) frontier = [...matches, ...out]
  for (let round = 0; round < MAX_ROUNDS && frontier.length > 0 && out.length < limit; round++) {
    const added = [...add(await revincluded(sql, iterRev, frontier, limit + 1)), ...add(await included(sql, iterInc, frontier, limit + 1))]
    frontier = added
  }
  return cut ? { matches: out, cut: { limit } } : { matches: out }
}

async function included(sql: Sql, specs: IncludeSpec[], from: SearchMatch[], limit: number): Promise<SearchMatch[]> {
  const out: SearchMatch[] = []
  for (const spec of specs) {
    const sources = from.filter((f) => spec.sourceType === '*' || f.type === spec.sourceType).map((f) => f.rid)
    if (sources.length === 0) continue
    const rows = await sql<any[]>`
      select r.rid::text, r.res_type, r.id, r.content
      from resource r
      join (select distinct i.target_type, i.target_id from idx_reference i
            where i.rid = any(${sources}::bigint[]) and i.target_id is not null
              ${spec.code === '*' ? sql`` : sql`and i.code = ${spec.code}`}
              ${spec.targetType ? sql`and i.target_type = ${spec.targetType}` : sql``}) t
        on r.res_type = t.target_type and r.id = t.target_id
      where not r.deleted
      limit ${limit}`
    out.push(...rows.map(toMatch))
  }
  return out
}

async function revincluded(sql: Sql, specs: IncludeSpec[], from: SearchMatch[], limit: number): Promise<SearchMatch[]> {
  const out: SearchMatch[] = []
  for (const spec of specs) {
    const targets = spec.targetType ? from.filter((f) => f.type === spec.targetType) : from
    if (targets.length === 0) continue
    const rows = await sql<any[]>`
      select distinct r.rid::text, r.res_type, r.id, r.content
      from idx_reference i
      join unnest(${targets.map((t) => t.type)}::text[], ${targets.map((t) => t.id)}::text[]) as t(type, id)
        on i.target_type = t.type and i.target_id = t.id
      join resource r on r.rid = i.rid
      where not r.deleted
        ${spec.sourceType === '*' ? sql`` : sql`and r.res_type = ${spec.sourceType}`}
        ${spec.code === '*' ? sql`` : sql`and i.code = ${spec.code}`}
      limit ${limit}`
    out.push(...rows.map(toMatch))
  }
  return out
}
