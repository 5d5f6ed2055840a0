// Whether a code is in a value set (its cached expansion) or a code system (the concept store), with
// the display to use and, on failure or a display that differs, a message, as HAPI answers
// $validate-code. https://hl7.org/fhir/R4/valueset-operation-validate-code.html
import type { Sql } from '../../db/client'
import { invalid } from '../../errors'
import type { Member } from './compose'
import { ensureExpansion } from './expansion'
import { conceptIn } from './lookup'
import type { CodeSystemRef, ValueSetRef } from './resolve'

export interface CodeToCheck {
  system?: string
  code: string
  display?: string
}

export interface ValidationResult {
  result: boolean
  message?: string
  display?: string
}

const label = (c: CodeToCheck) => (c.system ? `${c.system}#${c.code}` : c.code)

function displayMessage(c: CodeToCheck, expected: string | null): string | undefined {
  if (c.display === undefined || expected === null || c.display === expected) return undefined
  // HAPI's default: a display mismatch is a warning, the code stays valid
  return `Concept Display "${c.display}" does not match expected "${expected}" for '${label(c)}'`
}

/** Valid when any of the codes (a CodeableConcept's codings) is in the value set. */
export async function validateInValueSet(sql: Sql, vs: ValueSetRef, codes: CodeToCheck[]): Promise<ValidationResult> {
  const state = await ensureExpansion(sql, vs)
  if (state.error) throw invalid(`Unable to expand ValueSet ${vs.url}: ${state.error}`)
  for (const c of codes) {
    const [row] = await sql<{ system: string; display: string | null }[]>`
      select system, display from term_expansion
      where vs_id = ${vs.id} and code = ${c.code} ${c.system ? sql`and system = ${c.system}` : sql``}
      order by ord limit 1`
    if (row) return { result: true, display: row.display ?? undefined, message: displayMessage(c, row.display) }
  }
  const first = codes[0]
  return { result: false, message: `Unknown code '${first ? label(first) : ''}' for in-memory expansion of ValueSet '${vs.url}'` }
}

/** The same over members held in memory (a ValueSet given inline). */
export function validateInMembers(members: Member[], codes: CodeToCheck[], url: string): ValidationResult {
  for (const c of codes) {
    const m = members.find((x) => x.code === c.code && (!c.system || x.system === c.system))
    if (m) return { result: true, display: m.display ?? undefined, message: displayMessage(c, m.display) }
  }
  const first = codes[0]
  return { result: false, message: `Unknown code '${first ? label(first) : ''}' for in-memory expansion of ValueSet '${url}'` }
}

export async function validateInCodeSystem(sql: Sql, cs: CodeSystemRef, c: CodeToCheck): Promise<ValidationResult> {
  const concept = await conceptIn(sql, cs, c.code)
  if (!concept) return { result: false, message: `Unknown code '${cs.url}#${c.code}' in CodeSystem '${cs.url}'` }
  return { result: true, display: concept.display ?? undefined, message: displayMessage({ ...c, system: cs.url }, concept.display) }
}
