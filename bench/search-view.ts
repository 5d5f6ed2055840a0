// The API node's CPU to make a search's statements through the cancel-on-disconnect view of the pool
// (router.ts: every /fhir search builds its statements there), in this process and without a database:
// parse the query and run it (execute.ts runSearch) on a view whose statements a stub answers with no
// rows. Unlike bench/search-compile.ts (statements captured from the pool itself), this counts how the
// view makes its statements and fragments (shared/db/cancellable.ts). Trees alternate in one process;
// the best round of each counts.
// Usage: bun run bench/search-view.ts [treeA] [treeB] [rounds=10]   (trees default to this checkout)
import { resolve } from 'node:path'

const trees = process.argv.slice(2).filter((a) => !/^\d+$/.test(a))
if (trees.length === 0) trees.push(resolve(import.meta.dir, '..'))
const rounds = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 10)
const N = 2000

// [type, query, bounded]: the canonical searches (bench/search.ts) and a bounded page of the mix.
const QUERIES: [string, (i: number) => string, boolean][] = [
  ['Observation', (i) => `subject=Patient/p-${i % 50}&code=http://loinc.org|8302-2`, true],
  ['Patient', (i) => `name=Fam${i % 50}`, false],
  ['Observation', (i) => `code=http://loinc.org|8302-${i % 9}&date=ge2015`, true],
]

interface Tree {
  name: string
  search(type: string, query: string, bound: boolean): Promise<void>
}

async function load(dir: string): Promise<Tree> {
  const { createSql } = await import(`${dir}/shared/db/client`)
  const { prepareFhirDefinitions } = await import(`${dir}/shared/fhir/prepare`)
  const { parseSearch } = await import(`${dir}/shared/fhir/search/query/parse`)
  const { runSearch } = await import(`${dir}/shared/fhir/search/query/execute`)
  const { cancelledOnAbort } = await import(`${dir}/shared/db/cancellable`)
  const { Query } = await import(`${dir}/node_modules/postgres/src/query.js`)
  prepareFhirDefinitions()
  // Never connects: the pool lends its helpers; statements go to a handler that answers no rows.
  const pool = createSql('postgres://postgres@127.0.0.1:5432/postgres', { max: 1 })
  const answer = (q: { resolve(rows: unknown[]): void }) => q.resolve([])
  const stubbed: any = (strings: any, ...args: unknown[]) =>
    strings && Array.isArray(strings.raw) ? new Query(strings, args, answer, () => {}) : (pool as any)(strings, ...args)
  for (const k of ['unsafe', 'array', 'json', 'typed', 'types', 'file', 'options']) stubbed[k] = (pool as any)[k]
  const client = { signal: new AbortController().signal }
  return {
    name: dir.replace(/\/$/, '').split('/').pop() as string,
    async search(type, query, bound) {
      const view = cancelledOnAbort(stubbed, client)
      const q = parseSearch([type], new URLSearchParams(query), { defaultCount: 20, maxCount: 1000, lenient: false, rest: true, maxIncluded: 1000 })
      await runSearch(view.sql, q, 'http://localhost/fhir', undefined, bound)
      view.release()
    },
  }
}

const loaded: Tree[] = []
for (const dir of trees) loaded.push(await load(dir))
const best = loaded.map(() => QUERIES.map(() => Infinity))
for (let r = 0; r < rounds; r++)
  for (const [t, tree] of loaded.entries())
    for (const [k, [type, query, bound]] of QUERIES.entries()) {
      const at = performance.now()
      for (let i = 0; i < N; i++) await tree.search(type, query(i), bound)
      best[t][k] = Math.min(best[t][k], ((performance.now() - at) * 1000) / N)
    }
console.log(`µs per search through the view (parse + statements), best of ${rounds} rounds of ${N}`)
for (const [k, [type, query]] of QUERIES.entries())
  for (const [t, tree] of loaded.entries()) console.log(`${`${type}?${query(0)}`.padEnd(66)} ${tree.name.padEnd(16)} ${best[t][k].toFixed(1).padStart(7)}`)
process.exit(0)
