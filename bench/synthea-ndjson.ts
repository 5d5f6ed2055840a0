// Converts the Synthea transaction Bundles of ../shared/data into NDJSON files, one per resource type, as
// a Bulk Data export would write them: each copy of the data gets its own ids (urn:uuid:X becomes
// Type/X-c{copy}b{bundle}: bundles carry their own copies of shared Organizations and Practitioners under
// one uuid) and every `urn:uuid:` reference is rewritten to the id it names. Written outside the
// repository (never commit the data): /tmp by default.
// Usage: bun run bench/synthea-ndjson.ts [copies=10] [outDir=/tmp/synthea-ndjson-x{copies}]
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { dataPath } from '../tests/data'

export interface NdjsonSet {
  dir: string
  /** Resources per type, and their files. */
  files: { type: string; path: string; count: number }[]
  resources: number
}

/** Writes the NDJSON files of `copies` copies of synthea-smart into `dir` (emptied first). */
export async function writeSyntheaNdjson(copies: number, dir: string, folder = 'synthea-smart'): Promise<NdjsonSet> {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const source = dataPath(folder)
  const bundles = readdirSync(source)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => readFileSync(join(source, f), 'utf8'))
  const writers = new Map<string, { path: string; count: number; sink: ReturnType<ReturnType<typeof Bun.file>['writer']> }>()
  let resources = 0
  for (let c = 0; c < copies; c++) {
    for (const [b, text] of bundles.entries()) {
      const bundle = JSON.parse(text)
      const typeOf = new Map<string, string>()
      for (const e of bundle.entry) typeOf.set(e.fullUrl, e.resource.resourceType)
      // Rewritten as text: a `urn:uuid:` string is a fullUrl or a reference, never anything else here.
      const rewritten = JSON.stringify(bundle).replace(/"urn:uuid:([0-9a-f-]{36})"/g, (_m, u) => `"${typeOf.get(`urn:uuid:${u}`)}/${u}-c${c}b${b}"`)
      for (const e of JSON.parse(rewritten).entry) {
        const full = String(e.fullUrl)
        const resource = { ...e.resource, id: full.slice(full.indexOf('/') + 1) }
        let w = writers.get(resource.resourceType)
        if (!w) {
          const path = join(dir, `${resource.resourceType}.ndjson`)
          writers.set(resource.resourceType, (w = { path, count: 0, sink: Bun.file(path).writer({ highWaterMark: 1 << 20 }) }))
        }
        w.sink.write(`${JSON.stringify(resource)}\n`)
        w.count++
        resources++
      }
    }
  }
  for (const w of writers.values()) await w.sink.end()
  const files = [...writers.entries()].map(([type, w]) => ({ type, path: w.path, count: w.count })).sort((a, b) => a.type.localeCompare(b.type))
  return { dir, files, resources }
}

if (import.meta.main) {
  const copies = Number(process.argv[2] ?? 10)
  if (!Number.isInteger(copies) || copies < 1) throw new Error('copies must be a positive whole number')
  const dir = process.argv[3] ?? `/tmp/synthea-ndjson-x${copies}`
  const t0 = performance.now()
  const set = await writeSyntheaNdjson(copies, dir)
  console.log(`${set.resources.toLocaleString('en-US')} resources in ${set.files.length} files in ${dir} (${((performance.now() - t0) / 1000).toFixed(1)} s)`)
  for (const f of set.files) console.log(`  ${f.type}: ${f.count.toLocaleString('en-US')}`)
}
