// Keeps the concept store in step with stored CodeSystem and ValueSet resources, as the repository's
// terminology collaborator: each write replaces the rows of the versions it supersedes (a deletion only
// removes them) in the write's own statement, and moves the terminology generation on so that cached
// expansions are recomputed on next use; an expunge of either type does the same.
import type { Sql, TxSql } from '../../db/client'
import { join } from '../../db/fragments'
import type { PendingCtes, TerminologyMaintenance } from '../repo/collaborators'
import type { NewVersion } from '../repo/types'
import { flattenCodeSystem } from './code-system'
import { invalidateExpansions } from './expansion'
import { allocateCodeSystemIds, type CodeSystemEntry, insertCtes, type ValueSetEntry, valueSetEntry } from './store'

export function terminologyMaintenance(sql: Sql): TerminologyMaintenance {
  return { writeConcepts, removed: () => invalidateExpansions(sql) }
}

async function writeConcepts(tx: TxSql, written: NewVersion[]): Promise<PendingCtes | undefined> {
  const mine = written.filter((v) => v.type === 'CodeSystem' || v.type === 'ValueSet')
  if (mine.length === 0) return undefined
  const sql = tx as unknown as Sql
  const flats = []
  const valueSets: ValueSetEntry[] = []
  for (const v of mine) {
    if (v.deleted || !v.resource) continue
    if (v.type === 'CodeSystem') {
      const flat = flattenCodeSystem(v.resource)
      if (flat) flats.push({ rid: v.rid, flat })
    } else {
      const entry = valueSetEntry(v.resource, v.rid)
      if (entry) valueSets.push(entry)
    }
  }
  const ids = await allocateCodeSystemIds(tx, flats.length)
  const codeSystems: CodeSystemEntry[] = flats.map((f, n) => ({ id: ids[n], ...f }))
  const rids = mine.map((v) => v.rid)
  const ctes = [
    sql`term_cs_del as (delete from term_code_system where rid = any(${rids}::bigint[]))`,
    sql`term_vs_del as (delete from term_value_set where rid = any(${rids}::bigint[]))`,
    sql`term_gen as (update term_state set generation = generation + 1)`,
    ...insertCtes(tx, codeSystems, valueSets),
  ]
  return { ctes: join(sql, ctes, sql`, `) }
}
