// Before a search runs: the terminology its token modifiers need is loaded and current. :in / :not-in
// name a value set whose expansion must exist (unknown or unexpandable: 400); :above / :below name a
// system|code that must be in the concept store (400 otherwise, as HAPI). The predicates themselves
// (types/token.ts) then read the store in SQL. The search side's use of terminology: terminology/
// itself knows nothing of search.
import type { Sql } from '../../../db/client'
import { invalid } from '../../../errors'
import { ensureBuiltinTerminology } from '../../terminology/builtin'
import { ensureExpansion } from '../../terminology/expansion'
import { findCodeSystem, findValueSet, splitCanonical } from '../../terminology/resolve'
import { splitEscaped, unescape } from '../escape'
import type { Criterion } from './query'

const MODIFIERS = new Set(['in', 'not-in', 'above', 'below'])

export async function prepareTerminologyCriteria(sql: Sql, criteria: Criterion[]): Promise<void> {
  const uses: { modifier: string; value: string; code: string }[] = []
  const walk = (c: Criterion) => {
    if (c.kind === 'param' && c.def.type === 'token' && c.modifier && MODIFIERS.has(c.modifier))
      for (const value of c.values) uses.push({ modifier: c.modifier, value, code: c.def.code })
    else if (c.kind === 'chain') for (const b of c.branches) walk(b.inner)
    else if (c.kind === 'has' || c.kind === 'not') walk(c.inner)
    else if (c.kind === 'or') c.any.forEach(walk)
    else if (c.kind === 'and') c.all.forEach(walk)
  }
  criteria.forEach(walk)
  if (uses.length === 0) return
  await ensureBuiltinTerminology(sql)
  for (const u of uses) {
    if (u.modifier === 'in' || u.modifier === 'not-in') await checkValueSet(sql, unescape(u.value))
    else await checkConcept(sql, u.code, u.value)
  }
}

async function checkValueSet(sql: Sql, canonical: string): Promise<void> {
  const [url, version] = splitCanonical(canonical)
  const vs = await findValueSet(sql, url, version)
  if (!vs) throw invalid(`HAPI-2024: Unknown ValueSet: ${encodeURIComponent(canonical)}`)
  const state = await ensureExpansion(sql, vs)
  if (state.error) throw invalid(`Unable to expand ValueSet ${canonical}: ${state.error}`)
}

/** The system|code a :above / :below value names exists (the syntax was checked when the predicate was built). */
async function checkConcept(sql: Sql, param: string, raw: string): Promise<void> {
  const [systemPart, codePart] = splitEscaped(raw, '|')
  if (codePart === undefined) return
  const system = unescape(systemPart)
  const code = unescape(codePart)
  if (system === '' || code === '') return
  const cs = await findCodeSystem(sql, system)
  if (!cs) throw invalid(`Invalid token specified for parameter ${param} - unknown code system: ${system}`)
  const [row] = await sql`select 1 from term_concept where cs_id = ${cs.id} and code = ${code}`
  if (!row) throw invalid(`Invalid token specified for parameter ${param} - code ${code} does not exist in code system ${system}`)
}
