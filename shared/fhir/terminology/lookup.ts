// A concept of the store with what $lookup reports: its code system's name and version, display,
// designations, properties, and its direct parents and children in the is-a hierarchy.
// https://hl7.org/fhir/R4/codesystem-operation-lookup.html
import type { Sql } from '../../db/client'
import { type CodeSystemRef, findCodeSystem } from './resolve'

export interface ConceptDetails {
  codeSystem: CodeSystemRef
  code: string
  display: string | null
  designation: any[]
  property: any[]
  parents: { code: string; display: string | null }[]
  children: { code: string; display: string | null }[]
}

/** The concept, or undefined when the system or the code is unknown. */
export async function lookupConcept(sql: Sql, system: string, code: string, version?: string): Promise<ConceptDetails | undefined> {
  const cs = await findCodeSystem(sql, system, version)
  if (!cs) return undefined
  return conceptIn(sql, cs, code)
}

export async function conceptIn(sql: Sql, cs: CodeSystemRef, code: string): Promise<ConceptDetails | undefined> {
  const [concept] = await sql<{ display: string | null; designation: any[] | null; property: any[] | null }[]>`
    select display, designation, property from term_concept where cs_id = ${cs.id} and code = ${code}`
  if (!concept) return undefined
  const related = await sql<{ rel: 'parent' | 'child'; code: string; display: string | null }[]>`
    select 'parent' as rel, t.ancestor as code, c.display from term_closure t
      join term_concept c on c.cs_id = t.cs_id and c.code = t.ancestor
      where t.cs_id = ${cs.id} and t.descendant = ${code} and t.depth = 1
    union all
    select 'child', t.descendant, c.display from term_closure t
      join term_concept c on c.cs_id = t.cs_id and c.code = t.descendant
      where t.cs_id = ${cs.id} and t.ancestor = ${code} and t.depth = 1`
  return {
    codeSystem: cs,
    code,
    display: concept.display,
    designation: concept.designation ?? [],
    property: concept.property ?? [],
    parents: related.filter((r) => r.rel === 'parent').map(({ code, display }) => ({ code, display })),
    children: related.filter((r) => r.rel === 'child').map(({ code, display }) => ({ code, display })),
  }
}

/** A concept flagged not selectable (an abstract grouper). */
export function isAbstract(c: ConceptDetails): boolean {
  return c.property.some((p) => p?.code === 'notSelectable' && (p.valueBoolean === true || p.valueCode === 'true'))
}
