// The R4 CodeSystems and ValueSets of the definitions package (FHIR, v2 tables, v3 code systems),
// loaded into the concept store once per database, on the first terminology request: a marker in
// term_state says it is done, so server start and databases that never use terminology pay nothing.
import { poolOf } from '../../db/cancellable'
import type { Sql, TxSql } from '../../db/client'
import { loadDefinitionBundle, releaseDefinitionBundles } from '../definitions/load'
import { flattenCodeSystem } from './code-system'
import { allocateCodeSystemIds, type CodeSystemEntry, insertCtes, runCtes, type ValueSetEntry, valueSetEntry } from './store'

const FILES = ['valuesets.json', 'v3-codesystems.json', 'v2-tables.json']

/** Pools known to see a loaded store (a rebuild reloads the built-ins in the same transaction); keyed by
 *  poolOf, or a search's per-request view of the pool (db/cancellable.ts) read term_state every time. */
const loaded = new WeakSet<object>()

export async function ensureBuiltinTerminology(sql: Sql): Promise<void> {
  if (loaded.has(poolOf(sql))) return
  const [state] = await sql<{ loaded: boolean }[]>`select builtin_loaded_at is not null as loaded from term_state`
  if (!state?.loaded) {
    await sql.begin(async (tx) => {
      const [row] = await tx<{ loaded: boolean }[]>`select builtin_loaded_at is not null as loaded from term_state for update`
      if (row?.loaded) return
      await insertBuiltinTerminology(tx)
      await tx`update term_state set builtin_loaded_at = now(), generation = generation + 1`
    })
  }
  loaded.add(poolOf(sql))
}

/** Inserts the built-in rows (the caller holds the term_state row lock and has cleared what it replaces). */
export async function insertBuiltinTerminology(tx: TxSql): Promise<{ codeSystems: number; valueSets: number }> {
  const flats = []
  const valueSets: ValueSetEntry[] = []
  const seenCs = new Set<string>()
  const seenVs = new Set<string>()
  for (const file of FILES) {
    for (const { resource } of loadDefinitionBundle(file).entry) {
      if (resource?.resourceType === 'CodeSystem') {
        const flat = flattenCodeSystem(resource)
        if (flat && !seenCs.has(flat.url)) {
          seenCs.add(flat.url)
          flats.push(flat)
        }
      } else if (resource?.resourceType === 'ValueSet') {
        const entry = valueSetEntry(resource, null)
        if (entry && !seenVs.has(entry.url)) {
          seenVs.add(entry.url)
          valueSets.push(entry)
        }
      }
    }
  }
  releaseDefinitionBundles() // tens of MB; whoever needs them later re-reads
  const ids = await allocateCodeSystemIds(tx, flats.length)
  const codeSystems: CodeSystemEntry[] = flats.map((flat, n) => ({ id: ids[n], rid: null, flat }))
  await runCtes(tx, insertCtes(tx, codeSystems, valueSets))
  return { codeSystems: codeSystems.length, valueSets: valueSets.length }
}
