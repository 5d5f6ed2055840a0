// Which code system or value set a canonical URL names: a stored resource wins over a built-in one,
// the newest over older ones; `url|version` (or a version argument) picks that version.
// https://hl7.org/fhir/R4/references.html#canonical
import type { Sql, TxSql } from '../../db/client'
import type { Fragment } from '../../db/fragments'

export interface CodeSystemRef {
  id: string
  url: string
  version: string | null
  name: string | null
  content: string | null
}

export interface ValueSetRef {
  id: string
  url: string
  version: string | null
  rid: string | null
  definition: any
  expanded_generation: string | null
  expansion_error: string | null
  total: number | null
}

type AnySql = Sql | TxSql

/** `url|version` -> [url, version]. */
export function splitCanonical(canonical: string): [string, string | undefined] {
  const bar = canonical.indexOf('|')
  return bar < 0 ? [canonical, undefined] : [canonical.slice(0, bar), canonical.slice(bar + 1) || undefined]
}

/** A scalar subquery: the id of the code system `url` names, for use inside search predicates. */
export function codeSystemIdOf(sql: Sql, url: string, version?: string): Fragment {
  return sql`(select id from term_code_system where url = ${url} ${version ? sql`and version = ${version}` : sql``}
    order by (rid is null), id desc limit 1)`
}

/** A scalar subquery: the id of the value set `url` names. */
export function valueSetIdOf(sql: Sql, url: string, version?: string): Fragment {
  return sql`(select id from term_value_set where url = ${url} ${version ? sql`and version = ${version}` : sql``}
    order by (rid is null), id desc limit 1)`
}

export async function findCodeSystem(sql: AnySql, url: string, version?: string): Promise<CodeSystemRef | undefined> {
  const s = sql as Sql
  const [row] = await s<CodeSystemRef[]>`
    select id::text, url, version, name, content from term_code_system
    where id = ${codeSystemIdOf(s, url, version)}`
  return row
}

export async function findValueSet(sql: AnySql, url: string, version?: string): Promise<ValueSetRef | undefined> {
  const s = sql as Sql
  const [row] = await s<ValueSetRef[]>`
    select id::text, url, version, rid::text, definition, expanded_generation::text, expansion_error, total
    from term_value_set where id = ${valueSetIdOf(s, url, version)}`
  return row
}

/** The value set row of a stored ValueSet resource. */
export async function valueSetOfResource(sql: AnySql, rid: string): Promise<ValueSetRef | undefined> {
  const s = sql as Sql
  const [row] = await s<ValueSetRef[]>`
    select id::text, url, version, rid::text, definition, expanded_generation::text, expansion_error, total
    from term_value_set where rid = ${rid} order by term_value_set.id desc limit 1`
  return row
}

/** The code system row of a stored CodeSystem resource. */
export async function codeSystemOfResource(sql: AnySql, rid: string): Promise<CodeSystemRef | undefined> {
  const s = sql as Sql
  const [row] = await s<CodeSystemRef[]>`
    select id::text, url, version, name, content from term_code_system where rid = ${rid} order by term_code_system.id desc limit 1`
  return row
}
