// Cached value set expansions: computed from the compose rules on first use and kept in
// term_expansion until a CodeSystem or ValueSet write moves the terminology generation on; then the
// next use recomputes them. :in / :not-in search and $expand / $validate-code read the cache.
import type { Sql } from '../../db/client'
import { AppError } from '../../errors'
import { expandDefinition, type Member } from './compose'
import type { ValueSetRef } from './resolve'

export interface ExpansionState {
  total: number
  /** Why the value set cannot be expanded (an unknown code system, an unsupported filter...). */
  error: string | null
}

/** Makes the cached expansion of `vs` current and says how it went. */
export async function ensureExpansion(sql: Sql, vs: ValueSetRef): Promise<ExpansionState> {
  const [state] = await sql<{ generation: string }[]>`select generation::text from term_state`
  const generation = state?.generation ?? '0'
  if (vs.expanded_generation === generation) return { total: vs.total ?? 0, error: vs.expansion_error }
  let members: Member[] = []
  let error: string | null = null
  try {
    members = await expandDefinition(sql, vs.definition, new Set([vs.url]))
  } catch (err) {
    if (!(err instanceof AppError) || err.category !== 'invalid') throw err
    error = err.message
  }
  await sql.begin(async (tx) => {
    const [row] = await tx`select id from term_value_set where id = ${vs.id} for update`
    if (!row) return // replaced meanwhile; the caller's next lookup finds the new row
    await tx`delete from term_expansion where vs_id = ${vs.id}`
    if (members.length > 0) {
      await tx`insert into term_expansion (vs_id, ord, system, version, code, display)
        select ${vs.id}::bigint, ord - 1, system, version, code, display
        from unnest(${members.map((m) => m.system)}::text[], ${members.map((m) => m.version)}::text[],
          ${members.map((m) => m.code)}::text[], ${members.map((m) => m.display)}::text[])
          with ordinality as v(system, version, code, display, ord)`
    }
    await tx`update term_value_set set expanded_generation = ${generation}::bigint, expansion_error = ${error}, total = ${members.length} where id = ${vs.id}`
  })
  return { total: members.length, error }
}

/** Marks every cached expansion stale (after CodeSystems or ValueSets were expunged). */
export async function invalidateExpansions(sql: Sql): Promise<void> {
  await sql`update term_state set generation = generation + 1`
}

export interface PageOptions {
  /** Text the code or display must contain (case-insensitive). */
  filter?: string
  offset: number
  count: number
}

/** One page of a cached expansion, and how many members match the filter. */
export async function expansionPage(sql: Sql, vsId: string, opts: PageOptions): Promise<{ total: number; contains: Member[] }> {
  const f = opts.filter?.trim().toLowerCase()
  const where = f ? sql`and (strpos(lower(coalesce(display, '')), ${f}) > 0 or strpos(lower(code), ${f}) > 0)` : sql``
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from term_expansion where vs_id = ${vsId} ${where}`
  const contains = await sql<Member[]>`
    select system, version, code, display from term_expansion where vs_id = ${vsId} ${where}
    order by ord offset ${opts.offset} limit ${opts.count}`
  return { total: n, contains: [...contains] }
}

/** The same page over members held in memory (a ValueSet given inline to $expand). */
export function memberPage(members: Member[], opts: PageOptions): { total: number; contains: Member[] } {
  const f = opts.filter?.trim().toLowerCase()
  const matching = f ? members.filter((m) => m.code.toLowerCase().includes(f) || (m.display ?? '').toLowerCase().includes(f)) : members
  return { total: matching.length, contains: matching.slice(opts.offset, opts.offset + opts.count) }
}
