// The API node's CPU to make a search's statement, in this process and without a database: parse the
// query, compile it (execute.ts runSearch, its statement captured instead of sent) and write its text as
// postgres.js does before sending it (stringify). Deterministic enough to compare two trees on a shared
// machine: their rounds alternate in one process, and the best round of each counts.
// Usage: bun run bench/search-compile.ts [treeA] [treeB] [rounds=12]   (trees default to this checkout)
import { resolve } from 'node:path'

const trees = process.argv.slice(2).filter((a) => !/^\d+$/.test(a))
if (trees.length === 0) trees.push(resolve(import.meta.dir, '..'))
const rounds = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 12)
const N = 1000

// [type, query, bounded]: the canonical searches (bench/search.ts) and bounded pages of the mix.
const QUERIES: [string, (i: number) => string, boolean][] = [
  ['Observation', (i) => `subject=Patient/p-${i % 50}&code=http://loinc.org|8302-2`, true],
  ['Patient', (i) => `name=Fam${i % 50}`, false],
  ['Observation', (i) => `code=http://loinc.org|8302-${i % 9}&date=ge2015`, true],
  ['Observation', (i) => `status=final&category=laboratory${i % 3}`, true],
  ['Observation', (i) => `subject:Patient.gender=male&code=http://loinc.org|4548-${i % 9}`, true],
]

interface Tree {
  name: string
  compile(type: string, query: string, bound: boolean): Promise<void>
  stringify(): string
  fragments: number
}

async function load(dir: string): Promise<Tree> {
  const { createSql } = await import(`${dir}/shared/db/client`)
  const { prepareFhirDefinitions } = await import(`${dir}/shared/fhir/prepare`)
  const { parseSearch } = await import(`${dir}/shared/fhir/search/query/parse`)
  const { runSearch } = await import(`${dir}/shared/fhir/search/query/execute`)
  const { stringify } = await import(`${dir}/node_modules/postgres/src/types.js`)
  prepareFhirDefinitions()
  // Never connects: the statement awaited is captured and answers no rows.
  const pool = createSql('postgres://postgres@127.0.0.1:5432/postgres', { max: 1 })
  let last: any
  const tree: Tree = {
    name: dir.replace(/\/$/, '').split('/').pop() as string,
    fragments: 0,
    async compile(type, query, bound) {
      const q = parseSearch([type], new URLSearchParams(query), { defaultCount: 20, maxCount: 1000, lenient: false, rest: true, maxIncluded: 1000 })
      await runSearch(sql, q, 'http://localhost/fhir', undefined, bound)
    },
    stringify: () => stringify(last, last.strings[0], last.args[0], [], [], pool.options),
  }
  const sql: any = (...args: unknown[]) => {
    const made = (pool as any)(...args)
    if (made instanceof Promise) {
      tree.fragments++
      ;(made as any).then = (resolve: (rows: unknown[]) => void) => {
        last = made
        resolve([])
      }
    }
    return made
  }
  for (const k of ['unsafe', 'array', 'json', 'typed', 'types', 'file', 'options']) sql[k] = (pool as any)[k]
  return tree
}

const loaded: Tree[] = []
for (const dir of trees) loaded.push(await load(dir))
const best = loaded.map(() => QUERIES.map(() => ({ compile: Infinity, stringify: Infinity, fragments: 0, chars: 0 })))
for (let r = 0; r < rounds; r++)
  for (const [t, tree] of loaded.entries())
    for (const [k, [type, query, bound]] of QUERIES.entries()) {
      const f0 = tree.fragments
      let at = performance.now()
      for (let i = 0; i < N; i++) await tree.compile(type, query(i), bound)
      const compile = ((performance.now() - at) * 1000) / N
      const fragments = (tree.fragments - f0) / N
      at = performance.now()
      let chars = 0
      for (let i = 0; i < N; i++) chars = tree.stringify().length
      const b = best[t][k]
      best[t][k] = { compile: Math.min(b.compile, compile), stringify: Math.min(b.stringify, ((performance.now() - at) * 1000) / N), fragments, chars }
    }
console.log(`µs per search, best of ${rounds} rounds of ${N} (parse + compile; stringify), fragments made, statement characters`)
for (const [k, [type, query]] of QUERIES.entries())
  for (const [t, tree] of loaded.entries()) {
    const b = best[t][k]
    console.log(
      `${`${type}?${query(0)}`.padEnd(66)} ${tree.name.padEnd(16)} ${b.compile.toFixed(1).padStart(7)} ${b.stringify.toFixed(1).padStart(7)} ${String(b.fragments).padStart(5)} ${String(b.chars).padStart(7)}`,
    )
  }
process.exit(0)
