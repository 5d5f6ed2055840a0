// Index extraction alone (CPU only, no database): the rows of every Synthea resource of synthea-smart,
// as a write computes them, repeated; prints µs per resource, overall and for the commonest types.
// Usage: bun run bench/extract.ts [rounds]
import { prepareFhirDefinitions } from '../shared/fhir/prepare'
import { extractRows } from '../shared/fhir/search/index/index-store'
import { syntheaResources } from './synthea'

const rounds = Number(process.argv[2] ?? 8)
prepareFhirDefinitions()
const resources = syntheaResources('synthea-smart').map((r, i) => ({ rid: String(i + 1), type: r.resourceType as string, resource: r }))
const byType = new Map<string, typeof resources>()
for (const r of resources) byType.set(r.type, [...(byType.get(r.type) ?? []), r])

extractRows(resources) // compiles every type's plans
let rows = 0
const t0 = performance.now()
for (let i = 0; i < rounds; i++) {
  const x = extractRows(resources)
  rows = Object.values(x.rows).reduce((n, list) => n + list.length, 0)
}
const perResource = ((performance.now() - t0) * 1000) / rounds / resources.length
console.log(
  `extraction: ${perResource.toFixed(1)} µs per resource over ${resources.length} resources (${rounds} rounds), ${(rows / resources.length).toFixed(1)} index rows each`,
)
const common = [...byType.entries()].sort((a, b) => b[1].length - a[1].length).slice(0, 6)
console.log(
  common
    .map(([type, list]) => {
      const t = performance.now()
      for (let i = 0; i < rounds; i++) extractRows(list)
      return `${type} ${(((performance.now() - t) * 1000) / rounds / list.length).toFixed(1)} µs (${list.length})`
    })
    .join(', '),
)
