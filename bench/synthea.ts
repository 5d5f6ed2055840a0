// Resources of the Synthea bundles in ../shared/data (never copied into the repository).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { dataPath } from '../tests/data'

export function syntheaResources(folder = 'synthea-smart', limitFiles = Number.POSITIVE_INFINITY): any[] {
  const dir = dataPath(folder)
  const out: any[] = []
  for (const f of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .slice(0, limitFiles)) {
    const bundle = JSON.parse(readFileSync(join(dir, f), 'utf8'))
    for (const e of bundle.entry ?? []) if (e.resource) out.push(e.resource)
  }
  return out
}
