// $reindex-terminology: rebuilds the whole concept store from the built-in definitions and every
// stored (not deleted) CodeSystem and ValueSet, in one transaction, so readers see the old store until
// the new one is complete and a failed rebuild changes nothing. Idempotent: a retried run starts over.
import type { Sql, TxSql } from '../../db/client'
import { AppError } from '../../errors'
import { countCurrent, currentPage, ofTypes } from '../repo/current-pages'
import { flattenCodeSystem } from './code-system'
import { insertBuiltinTerminology } from './builtin'
import { allocateCodeSystemIds, type CodeSystemEntry, insertCtes, runCtes, type ValueSetEntry, valueSetEntry } from './store'

const PAGE = 200

export interface RebuildResult {
  codeSystems: number
  valueSets: number
}

/** Called after each page with the rebuild's transaction (progress saved through it commits with the rebuild). */
export type RebuildProgress = (p: { processed: number; total: number }, tx: TxSql) => void | Promise<void>

/** With `wait: false`, throws `busy` at once when another rebuild holds the store; otherwise waits for it. */
export async function rebuildTerminology(sql: Sql, onProgress?: RebuildProgress, opts: { wait?: boolean } = {}): Promise<RebuildResult> {
  return sql.begin(async (tx) => {
    try {
      if (opts.wait === false) await tx`select 1 from term_state for update nowait`
      else await tx`select 1 from term_state for update`
    } catch (err) {
      if ((err as { code?: string }).code === '55P03')
        throw new AppError('busy', 'Operation was cancelled because other terminology background tasks are currently running. Try again in a few minutes.')
      throw err
    }
    const stored = ofTypes(tx as unknown as Sql, ['CodeSystem', 'ValueSet'])
    const total = (await countCurrent(tx as unknown as Sql, stored)) + 1
    await tx`delete from term_code_system`
    await tx`delete from term_value_set`
    const builtin = await insertBuiltinTerminology(tx)
    const result = { ...builtin }
    await onProgress?.({ processed: 1, total }, tx)
    let processed = 1
    let after = '0'
    for (;;) {
      const rows = await currentPage(tx as unknown as Sql, stored, after, PAGE)
      if (rows.length === 0) break
      after = rows[rows.length - 1].rid
      const flats = []
      const valueSets: ValueSetEntry[] = []
      for (const r of rows) {
        const resource = JSON.parse(r.content)
        if (r.type === 'CodeSystem') {
          const flat = flattenCodeSystem(resource)
          if (flat) flats.push({ rid: r.rid, flat })
        } else {
          const entry = valueSetEntry(resource, r.rid)
          if (entry) valueSets.push(entry)
        }
      }
      const ids = await allocateCodeSystemIds(tx, flats.length)
      const codeSystems: CodeSystemEntry[] = flats.map((f, i) => ({ id: ids[i], ...f }))
      await runCtes(tx, insertCtes(tx, codeSystems, valueSets))
      result.codeSystems += codeSystems.length
      result.valueSets += valueSets.length
      processed += rows.length
      await onProgress?.({ processed, total }, tx)
    }
    await tx`update term_state set builtin_loaded_at = now(), generation = generation + 1`
    return result
  }) as Promise<RebuildResult>
}
