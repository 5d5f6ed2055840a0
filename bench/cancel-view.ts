// CPU the cancel-on-disconnect view (shared/db/cancellable.ts) adds to a search's SQL building: the
// subject+code search's page statement built through the pool and through a view made per search (as the
// router does), never run. Usage: bun run bench/cancel-view.ts [searches]
import { cancelledOnAbort } from '../shared/db/cancellable'
import { createSql, type Sql } from '../shared/db/client'
import { prepareFhirDefinitions } from '../shared/fhir/prepare'
import { boundedPage } from '../shared/fhir/search/query/bounded'
import { searchWhere } from '../shared/fhir/search/query/execute'
import { parseSearch } from '../shared/fhir/search/query/parse'

prepareFhirDefinitions()
const n = Number(process.argv[2] ?? 200_000)
const sql = createSql('postgres://postgres@127.0.0.1:5432/postgres', { max: 1 }) // never connects: nothing runs
const base = 'http://localhost/fhir'
const query = new URLSearchParams('subject=Patient/abc&code=http://loinc.org|8302-2')
const q = parseSearch(['Observation'], query, { defaultCount: 20, maxCount: 1000, lenient: false, rest: true, maxIncluded: 1000 })
const client = { signal: new AbortController().signal }

let calls = 0
const counting = ((...a: unknown[]) => (calls++, (sql as unknown as (...x: unknown[]) => unknown)(...a))) as unknown as Sql
Object.assign(counting, { unsafe: sql.unsafe, array: sql.array, json: sql.json, typed: sql.typed, types: sql.types, options: sql.options })

function build(s: Sql): unknown {
  const page = boundedPage(s, q, base, 'r0', undefined, { asOf: '2026-01-01T00:00:00Z', firstPage: true, reverse: false })
  return [page, searchWhere(s, q, base)]
}

build(counting)
console.log(`${calls} calls of the pool per search's statement`)

const variants: Record<string, () => unknown> = {
  pool: () => build(sql),
  view: () => {
    const v = cancelledOnAbort(sql, client)
    const out = build(v.sql)
    v.release()
    return out
  },
  'view only (made and released, nothing built through it)': () => {
    const v = cancelledOnAbort(sql, client)
    const out = build(sql)
    v.release()
    return out
  },
}
for (let round = 0; round < 3; round++) {
  for (const [name, run] of Object.entries(variants)) {
    for (let i = 0; i < 20_000; i++) run()
    const c0 = process.cpuUsage()
    for (let i = 0; i < n; i++) run()
    const c = process.cpuUsage(c0)
    console.log(`round ${round} ${name}: ${(((c.user + c.system) / n) * 1000).toFixed(0)} ns per search`)
  }
}
await sql.end()
