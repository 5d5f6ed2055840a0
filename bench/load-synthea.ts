// Loads the Synthea bundles `copies` times straight through the repository (set-wise writes with index
// rows, one transaction per bundle), each copy with its own ids: urn:uuid:X becomes Type/X-c{copy}b{bundle}
// (bundles carry their own copies of shared Organizations and Practitioners under the same uuid).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../shared/config'
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
