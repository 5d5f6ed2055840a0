// The tags, security labels and profiles in use by current resources (system- and type-level $meta),
// read from the `_tag`, `_security` (idx_token) and `_profile` (idx_uri) index rows; a label's display
// is taken from one resource that carries it. https://hl7.org/fhir/R4/resource-operation-meta.html
import type { Sql } from '../../../db/client'

type Coding = { system?: string; code?: string; display?: string }

export interface MetaInUse {
  profile: string[]
  security: Coding[]
  tag: Coding[]
}

/** Of the given type, or of every type when none is given. */
export async function metaInUse(sql: Sql, type?: string): Promise<MetaInUse> {
  // The types with rows, so that each lookup starts from the (res_type, code, ...) indexes.
  const types = type
    ? [type]
    : (await sql<{ res_type: string }[]>`select res_type from resource_count group by res_type having sum(n) > 0`).map((r) => r.res_type)
  if (types.length === 0) return { profile: [], security: [], tag: [] }
  const labels = await sql<{ code: string; system: string | null; value: string; display: string | null }[]>`
    select t.code, t.system, t.value, (
      select c ->> 'display' from resource r, jsonb_array_elements(r.content::jsonb -> 'meta' -> (case t.code when '_tag' then 'tag' else 'security' end)) c
      where r.rid = t.rid and c ->> 'code' = t.value and (c ->> 'system') is not distinct from t.system limit 1) as display
    from (
      select code, system, value, min(rid) as rid from idx_token
      where res_type = any(${types}::text[]) and code in ('_tag', '_security') and value is not null
      group by code, system, value) t`
  const profiles = await sql<{ value: string }[]>`
    select distinct value from idx_uri where res_type = any(${types}::text[]) and code = '_profile'`
  const coding = (l: (typeof labels)[number]): Coding => ({
    ...(l.system !== null ? { system: l.system } : {}),
    code: l.value,
    ...(l.display !== null ? { display: l.display } : {}),
  })
  const key = (c: Coding) => `${c.system ?? ''}|${c.code ?? ''}`
  const sorted = (cs: Coding[]) => cs.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
  return {
    profile: profiles.map((p) => p.value).sort(),
    security: sorted(labels.filter((l) => l.code === '_security').map(coding)),
    tag: sorted(labels.filter((l) => l.code === '_tag').map(coding)),
  }
}
