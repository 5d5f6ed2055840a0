// A realistic search mix (issue 23): a seeded random set of queries drawn from the loaded Synthea data
// (bench/search-mix-queries.ts), run 4 at a time against an API node; prints the first page's latency
// p50/p95/p99/max per category and overall, the queries without an answer (30 s) or with an error, and
// the 10 slowest with the shape of their statements' plans (plan-shape.ts).
//
// Usage: bun run bench/search-mix.ts [copies=10] [--queries 2000] [--seed 23] [--concurrency 4]
//          [--analyze] [--forget-stats] [--ids out.json] [--timeout 30000]
//   BENCH_DB=<db> keeps (and reuses) the database. A fresh load is not analysed (as a load leaves it:
//   autovacuum is off here). --analyze runs ANALYZE first; --forget-stats removes the tables' statistics
//   first (pg_statistic rows and pg_class estimates, as before any ANALYZE) to measure "as loaded" again.
//   --ids writes each query's first-page ids, to compare the answers of two builds.
//   Prints the CPU per query of the API node (the server), PostgreSQL and the machine over the run.
import { writeFileSync } from 'node:fs'
import { createSql, ensureDatabase } from '../shared/db/client'
import { ensureSynthea } from './load-synthea'
import { planShapes } from './plan-shape'
import { generateMix, type MixQuery } from './search-mix-queries'
import { BENCH_KEY, cpuMeter, startBenchServer } from './server'

const args = process.argv.slice(2)
const flag = (name: string) => args.includes(`--${name}`)
const option = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1] : dflt
}
const copies = Number(args.find((a, i) => /^\d+$/.test(a) && !args[i - 1]?.startsWith('--')) ?? 10)
const count = Number(option('queries', '2000'))
const seed = Number(option('seed', '23'))
const concurrency = Number(option('concurrency', '4'))
const TIMEOUT_MS = Number(option('timeout', '30000'))

// Every statement of the server is cut at TIMEOUT (the database's default for new sessions): a query the
// client gave up on would otherwise keep its connection and starve the rest of the run.
const generated = process.env.BENCH_DB === undefined
process.env.BENCH_DB ??= `bench_mix_${Date.now().toString(36)}`
const pg = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432'
await ensureDatabase(`${pg}/${process.env.BENCH_DB}`)
const admin = createSql(`${pg}/postgres`, { max: 1 })
await admin.unsafe(`alter database "${process.env.BENCH_DB}" set statement_timeout = ${Math.round(TIMEOUT_MS)}`)
await admin.end()
const server = await startBenchServer(18086)
const sql = createSql(server.databaseUrl, { max: 2 })

interface Result extends MixQuery {
  ms: number
  status: number | 'no answer'
  ids?: string[]
}

function pct(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}

const fmt = (v: number) => (Number.isNaN(v) ? '-' : v >= 100 ? String(Math.round(v)) : v.toFixed(1))

function line(label: string, rs: Result[]): string {
  const ms = rs
    .filter((r) => r.status === 200)
    .map((r) => r.ms)
    .sort((a, b) => a - b)
  const bad = rs.filter((r) => r.status !== 200 && r.status !== 'no answer').length
  const none = rs.filter((r) => r.status === 'no answer').length
  return `${label.padEnd(18)} ${String(rs.length).padStart(5)} ${fmt(pct(ms, 50)).padStart(7)} ${fmt(pct(ms, 95)).padStart(7)} ${fmt(pct(ms, 99)).padStart(7)} ${fmt(ms[ms.length - 1] ?? Number.NaN).padStart(8)} ${String(bad).padStart(6)} ${String(none).padStart(9)}`
}

async function runOne(q: MixQuery, keepIds: boolean): Promise<Result> {
  const t = performance.now()
  try {
    const res = await fetch(`${server.base}/fhir/${q.path}`, {
      headers: { authorization: `Bearer ${BENCH_KEY}` },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    })
    const body = await res.text()
    const ms = performance.now() - t
    const ids =
      keepIds && res.status === 200
        ? (JSON.parse(body).entry ?? []).map((e: any) => `${e.search?.mode}:${e.resource.resourceType}/${e.resource.id}`)
        : undefined
    return { ...q, ms, status: res.status, ids }
  } catch {
    return { ...q, ms: performance.now() - t, status: 'no answer' }
  }
}

try {
  await ensureSynthea(sql, server.databaseUrl, copies, { analyze: false })
  if (flag('forget-stats')) {
    // As a load leaves the tables before any ANALYZE: no column statistics, no row-count estimates.
    await sql`delete from pg_statistic where starelid in (select oid from pg_class where relnamespace = 'public'::regnamespace)`
    await sql`update pg_class set reltuples = -1, relpages = 0 where relnamespace = 'public'::regnamespace and relkind = 'r'`
    console.log('statistics removed (as loaded)')
  }
  if (flag('analyze')) {
    const t = performance.now()
    await sql`analyze`
    console.log(`ANALYZE: ${((performance.now() - t) / 1000).toFixed(1)} s`)
  }
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from resource where not deleted`
  const [{ analysed }] = await sql<
    { analysed: number }[]
  >`select count(*)::int as analysed from pg_stat_user_tables where last_analyze is not null or last_autoanalyze is not null`
  const queries = await generateMix(sql, seed, count)
  console.log(`${n} resources (Synthea x${copies}), ${queries.length} queries (seed ${seed}), ${concurrency} at a time; tables analysed: ${analysed}`)
  // Warm-up: the first 50 queries once (connections, prepared statements, caches).
  for (const q of queries.slice(0, 50)) await runOne(q, false)
  const results: Result[] = new Array(queries.length)
  let next = 0
  const t0 = performance.now()
  const cpu = cpuMeter({ server: server.pid })
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < queries.length) {
        const i = next++
        results[i] = await runOne(queries[i], option('ids', '') !== '')
        if ((i + 1) % 250 === 0) console.log(`  ${i + 1} queries, ${((performance.now() - t0) / 1000).toFixed(0)} s`)
      }
    }),
  )
  console.log(`ran in ${((performance.now() - t0) / 1000).toFixed(1)} s (${cpu.perUnit(queries.length)})\n`)
  console.log(
    `${'category'.padEnd(18)} ${'n'.padStart(5)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'p99'.padStart(7)} ${'max'.padStart(8)} ${'errors'.padStart(6)} ${'no answer'.padStart(9)}  (ms, first page)`,
  )
  const categories = [...new Set(results.map((r) => r.category))].sort()
  for (const c of categories)
    console.log(
      line(
        c,
        results.filter((r) => r.category === c),
      ),
    )
  console.log(line('ALL', results))
  const errors = results.filter((r) => r.status !== 200)
  if (errors.length > 0) {
    console.log('\nnot 200:')
    for (const r of errors.slice(0, 20)) console.log(`  ${r.status} ${r.path}`)
  }
  const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 10)
  console.log('\n10 slowest (plan shapes as the server plans them, estimated rows in parentheses):')
  for (const r of slowest) {
    console.log(`  ${fmt(r.ms)} ms  ${r.status}  ${r.path}`)
    for (const shape of await planShapes(server.databaseUrl, r.path)) console.log(`      ${shape}`)
  }
  const idsFile = option('ids', '')
  if (idsFile)
    writeFileSync(
      idsFile,
      JSON.stringify(results.map((r) => ({ category: r.category, path: r.path, status: r.status, ms: Math.round(r.ms * 10) / 10, ids: r.ids }))),
    )
} finally {
  await sql.end()
  await server.stop()
  if (generated) {
    const admin = createSql(`${pg}/postgres`, { max: 1 })
    await admin`drop database if exists ${admin(process.env.BENCH_DB as string)} with (force)`
    await admin.end()
  }
}
