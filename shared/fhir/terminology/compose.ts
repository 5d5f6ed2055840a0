// A value set's codes from its compose rules, evaluated against the concept store: include a whole
// system, listed concepts, filtered concepts (is-a, descendent-of, is-not-a, generalizes, =, in,
// not-in, regex, exists) or other value sets; exclude the same way. A value set given only as an
// expansion lists its contains. https://hl7.org/fhir/R4/valueset.html#compositions
import type { Sql } from '../../db/client'
import { type Fragment, join } from '../../db/fragments'
import { invalid } from '../../errors'
import { findCodeSystem, findValueSet, splitCanonical } from './resolve'

export interface Member {
  system: string
  version: string | null
  code: string
  display: string | null
}

const key = (m: { system: string; code: string }) => `${m.system}|${m.code}`

/** The members of a ValueSet definition, in order, each system|code once. Throws `invalid` when it cannot be expanded. */
export async function expandDefinition(sql: Sql, def: any, seen: ReadonlySet<string>): Promise<Member[]> {
  const compose = def?.compose
  if (!Array.isArray(compose?.include) || compose.include.length === 0) return containsOf(def?.expansion?.contains)
  const out = new Map<string, Member>()
  for (const inc of compose.include) for (const m of await includeMembers(sql, inc, seen)) if (!out.has(key(m))) out.set(key(m), m)
  for (const exc of Array.isArray(compose.exclude) ? compose.exclude : []) for (const m of await includeMembers(sql, exc, seen)) out.delete(key(m))
  return [...out.values()]
}

/** The members of the value set a canonical names (an include's valueSet). */
async function expandCanonical(sql: Sql, canonical: string, seen: ReadonlySet<string>): Promise<Member[]> {
  const [url, version] = splitCanonical(canonical)
  if (seen.has(url)) throw invalid(`Unable to expand ValueSet: it includes itself through ${url}`)
  const vs = await findValueSet(sql, url, version)
  if (!vs) throw invalid(`Unable to expand imported value set: unknown ValueSet ${canonical}`)
  return expandDefinition(sql, vs.definition, new Set([...seen, url]))
}

function containsOf(contains: unknown): Member[] {
  const out: Member[] = []
  const walk = (list: unknown) => {
    if (!Array.isArray(list)) return
    for (const c of list) {
      if (typeof c?.system === 'string' && typeof c.code === 'string')
        out.push({ system: c.system, version: c.version ?? null, code: c.code, display: c.display ?? null })
      walk(c?.contains)
    }
  }
  walk(contains)
  return out
}

// One include (or exclude): its system part intersected with each value set it names.
async function includeMembers(sql: Sql, inc: any, seen: ReadonlySet<string>): Promise<Member[]> {
  let members: Member[] | undefined
  if (typeof inc?.system === 'string' && inc.system !== '') members = await systemMembers(sql, inc)
  for (const url of Array.isArray(inc?.valueSet) ? inc.valueSet : []) {
    const other = await expandCanonical(sql, String(url), seen)
    if (!members) members = other
    else {
      const keys = new Set(other.map(key))
      members = members.filter((m) => keys.has(key(m)))
    }
  }
  return members ?? []
}

async function systemMembers(sql: Sql, inc: any): Promise<Member[]> {
  const system: string = inc.system
  const cs = await findCodeSystem(sql, system, typeof inc.version === 'string' ? inc.version : undefined)
  const version = cs?.version ?? inc.version ?? null
  const listed: any[] = Array.isArray(inc.concept) ? inc.concept.filter((c: any) => typeof c?.code === 'string' && c.code !== '') : []
  if (listed.length > 0) {
    const displays = new Map<string, string | null>()
    if (cs) {
      const rows = await sql<{ code: string; display: string | null }[]>`
        select code, display from term_concept where cs_id = ${cs.id} and code = any(${listed.map((c) => c.code)}::text[])`
      for (const r of rows) displays.set(r.code, r.display)
    }
    return listed.map((c) => ({ system, version, code: c.code, display: c.display ?? displays.get(c.code) ?? null }))
  }
  if (!cs || cs.content === 'not-present') throw invalid(`Unable to expand ValueSet because CodeSystem could not be found: ${system}`)
  const filters: any[] = Array.isArray(inc.filter) ? inc.filter : []
  const conds = filters.map((f) => filterCondition(sql, cs.id, f))
  const where = conds.length > 0 ? sql`and ${join(sql, conds, sql` and `)}` : sql``
  try {
    const rows = await sql<{ code: string; display: string | null }[]>`
      select c.code, c.display from term_concept c where c.cs_id = ${cs.id} ${where} order by c.ord`
    return rows.map((r) => ({ system, version, code: r.code, display: r.display }))
  } catch (err) {
    if ((err as { code?: string }).code === '2201B') throw invalid(`Invalid regex in a filter of the ValueSet: ${(err as Error).message}`)
    throw err
  }
}

// A filter as a condition on the concept row `c`. https://hl7.org/fhir/R4/valueset-filter-operator.html
function filterCondition(sql: Sql, csId: string, f: any): Fragment {
  const prop = String(f?.property ?? '')
  const op = String(f?.op ?? '')
  const value = String(f?.value ?? '')
  const onCode = prop === 'concept' || prop === 'code'
  const below = (self: boolean) =>
    sql`c.code in (select descendant from term_closure where cs_id = ${csId} and ancestor = ${value} ${self ? sql`` : sql`and depth > 0`})`
  const list = value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean)
  const field = onCode ? sql`c.code` : prop === 'display' ? sql`c.display` : undefined
  switch (op) {
    case 'is-a':
      if (onCode) return below(true)
      break
    case 'descendent-of':
      if (onCode) return below(false)
      break
    case 'is-not-a':
      if (onCode) return sql`not ${below(true)}`
      break
    case 'generalizes':
      if (onCode) return sql`c.code in (select ancestor from term_closure where cs_id = ${csId} and descendant = ${value})`
      break
    case '=':
      return field ? sql`${field} = ${value}` : propertyMatches(sql, prop, sql`= ${value}`)
    case 'in':
      return field ? sql`${field} = any(${list}::text[])` : propertyMatches(sql, prop, sql`= any(${list}::text[])`)
    case 'not-in':
      return field ? sql`not (${field} = any(${list}::text[]))` : sql`not ${propertyMatches(sql, prop, sql`= any(${list}::text[])`)}`
    case 'regex':
      // FHIR regexes match the whole value
      return field ? sql`${field} ~ ${`^(?:${value})$`}` : propertyMatches(sql, prop, sql`~ ${`^(?:${value})$`}`)
    case 'exists': {
      const has = propertyMatches(sql, prop, sql`is not null`)
      return value === 'false' ? sql`not ${has}` : has
    }
  }
  throw invalid(`Unable to expand ValueSet: filter "${prop} ${op} ${value}" is not supported`)
}

// The concept has property `prop` with a value satisfying `test` (code, string, boolean, integer or a
// Coding's code, compared as text).
function propertyMatches(sql: Sql, prop: string, test: Fragment): Fragment {
  return sql`exists (select 1 from jsonb_array_elements(coalesce(c.property, '[]'::jsonb)) p
    where p->>'code' = ${prop}
      and coalesce(p->>'valueCode', p->>'valueString', p->>'valueBoolean', p->>'valueInteger', p->>'valueDecimal', p->>'valueDateTime', p->'valueCoding'->>'code') ${test})`
}
