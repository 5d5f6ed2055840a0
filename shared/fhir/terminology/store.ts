// Writes of the concept store, as CTEs: the same fragments serve the write hook (inside the write's
// single statement), the built-in load and the rebuild. Every list goes through unnest(), so a code
// system of any size is one statement.
import type { Sql, TxSql } from '../../db/client'
import { type Fragment, join } from '../../db/fragments'
import type { FlatCodeSystem } from './code-system'

export interface CodeSystemEntry {
  /** Allocated beforehand (allocateCodeSystemIds) so that concepts can name it in the same statement. */
  id: string
  rid: string | null
  flat: FlatCodeSystem
}

export interface ValueSetEntry {
  url: string
  version: string | null
  name: string | null
  rid: string | null
  /** The ValueSet without its narrative. */
  definition: any
}

type AnySql = Sql | TxSql

/** A value set as the store keeps it; undefined without a url. */
export function valueSetEntry(vs: any, rid: string | null): ValueSetEntry | undefined {
  if (!vs || typeof vs.url !== 'string' || vs.url === '') return undefined
  const { text: _narrative, ...definition } = vs
  return {
    url: vs.url,
    version: typeof vs.version === 'string' ? vs.version : null,
    name: typeof vs.name === 'string' ? vs.name : typeof vs.title === 'string' ? vs.title : null,
    rid,
    definition,
  }
}

export async function allocateCodeSystemIds(sql: AnySql, n: number): Promise<string[]> {
  if (n === 0) return []
  const rows = await sql<{ id: string }[]>`
    select nextval(pg_get_serial_sequence('term_code_system', 'id'))::text as id from generate_series(1, ${n})`
  return rows.map((r) => r.id)
}

/** CTEs (named term_*_ins) inserting the code systems with their concepts and closure, and the value sets. */
export function insertCtes(sql: AnySql, codeSystems: CodeSystemEntry[], valueSets: ValueSetEntry[]): Fragment[] {
  const s = sql as Sql
  const out: Fragment[] = []
  if (codeSystems.length > 0) {
    out.push(s`term_cs_ins as (
      insert into term_code_system (id, url, version, name, content, rid) overriding system value
      select * from unnest(${codeSystems.map((c) => c.id)}::bigint[], ${codeSystems.map((c) => c.flat.url)}::text[],
        ${codeSystems.map((c) => c.flat.version)}::text[], ${codeSystems.map((c) => c.flat.name)}::text[],
        ${codeSystems.map((c) => c.flat.content)}::text[], ${codeSystems.map((c) => c.rid)}::bigint[]))`)
    const cs: string[] = []
    const code: string[] = []
    const ord: number[] = []
    const display: (string | null)[] = []
    const designation: (string | null)[] = []
    const property: (string | null)[] = []
    const ccs: string[] = []
    const anc: string[] = []
    const desc: string[] = []
    const depth: number[] = []
    for (const c of codeSystems) {
      c.flat.concepts.forEach((k, n) => {
        cs.push(c.id)
        code.push(k.code)
        ord.push(n)
        display.push(k.display)
        designation.push(k.designation ? JSON.stringify(k.designation) : null)
        property.push(k.property ? JSON.stringify(k.property) : null)
      })
      for (const [a, d, n] of c.flat.closure) {
        ccs.push(c.id)
        anc.push(a)
        desc.push(d)
        depth.push(n)
      }
    }
    if (cs.length > 0) {
      out.push(s`term_concept_ins as (
        insert into term_concept (cs_id, code, ord, display, designation, property)
        select cs_id, code, ord, display, designation::jsonb, property::jsonb
        from unnest(${cs}::bigint[], ${code}::text[], ${ord}::int[], ${display}::text[], ${designation}::text[], ${property}::text[])
          as v(cs_id, code, ord, display, designation, property))`)
      out.push(s`term_closure_ins as (
        insert into term_closure (cs_id, ancestor, descendant, depth)
        select * from unnest(${ccs}::bigint[], ${anc}::text[], ${desc}::text[], ${depth}::int[]))`)
    }
  }
  if (valueSets.length > 0) {
    out.push(s`term_vs_ins as (
      insert into term_value_set (url, version, name, rid, definition)
      select url, version, name, rid, definition::jsonb
      from unnest(${valueSets.map((v) => v.url)}::text[], ${valueSets.map((v) => v.version)}::text[], ${valueSets.map((v) => v.name)}::text[],
        ${valueSets.map((v) => v.rid)}::bigint[], ${valueSets.map((v) => JSON.stringify(v.definition))}::text[])
        as v(url, version, name, rid, definition))`)
  }
  return out
}

/** Runs CTEs as one statement (nothing when there are none). */
export async function runCtes(sql: AnySql, ctes: Fragment[]): Promise<void> {
  if (ctes.length === 0) return
  const s = sql as Sql
  await s`with ${join(s, ctes, s`, `)} select 1`
}
