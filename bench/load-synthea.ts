// Loads the Synthea bundles `copies` times straight through the repository (set-wise writes with index
// rows, one transaction per bundle), each copy with its own ids: urn:uuid:X becomes Type/X-c{copy}b{bundle}
// (bundles carry their own copies of shared Organizations and Practitioners under the same uuid).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Config, loadConfig } from '../shared/config'
import type { Sql } from '../shared/db/client'
import type { NewVersion } from '../shared/fhir/repo/types'
import { withServerMeta } from '../shared/fhir/resource-meta'
import { createRepo } from '../shared/fhir/store'
import { dataPath } from '../tests/data'

export async function loadSynthea(sql: Sql, config: Config, copies: number, onProgress?: (n: number) => void): Promise<number> {
  const repo = await createRepo(sql, config)
  const dir = dataPath('synthea-smart')
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'))
  let total = 0
  for (let c = 0; c < copies; c++) {
    for (const [b, f] of files.entries()) {
      const bundle = JSON.parse(readFileSync(join(dir, f), 'utf8'))
      const typeOf = new Map<string, string>()
      for (const e of bundle.entry) typeOf.set(e.fullUrl, e.resource.resourceType)
      const text = JSON.stringify(bundle).replace(/"urn:uuid:([0-9a-f-]{36})"/g, (_m, u) => `"${typeOf.get(`urn:uuid:${u}`)}/${u}-c${c}b${b}"`)
      const entries = JSON.parse(text).entry as any[]
      const rids = await repo.ids.allocate(entries.length)
      const now = new Date()
      const versions: NewVersion[] = entries.map((e, i) => {
        // the fullUrl was rewritten with the references: Type/uuid-cNbM is the id to use
        const id = String(e.fullUrl).slice(String(e.fullUrl).indexOf('/') + 1)
        const resource = withServerMeta(e.resource, id, 1, now)
        return { rid: rids[i], type: resource.resourceType, id, version: 1, lastUpdated: now, deleted: false, content: JSON.stringify(resource), resource }
      })
      await repo.transaction((w) => w.write(versions, new Set()))
      total += versions.length
      onProgress?.(total)
    }
  }
  return total
}

/**
 * The Synthea data `copies` times in the benchmark database, loaded and analysed when it is empty
 * (`analyze: false` leaves the tables as a load leaves them, without statistics); a database kept with
 * BENCH_DB is reused as it is. Prints what it did.
 */
export async function ensureSynthea(sql: Sql, databaseUrl: string, copies: number, opts: { analyze?: boolean } = {}): Promise<void> {
  const [{ loaded }] = await sql<{ loaded: number }[]>`select count(*)::int as loaded from resource`
  if (loaded > 0) return void console.log(`reusing ${loaded} resources in ${databaseUrl}`)
  const t0 = performance.now()
  const n = await loadSynthea(sql, loadConfig({ DATABASE_URL: databaseUrl }), copies)
  const seconds = (performance.now() - t0) / 1000
  console.log(`loaded ${n} resources in ${seconds.toFixed(1)} s (${Math.round(n / seconds)} resources/s, direct set-wise writes with indexes)`)
  if (opts.analyze !== false) await sql`analyze`
}
