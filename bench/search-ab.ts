// Concurrent A/B of the API node's CPU per search: two API nodes, one per tree, on the same database,
// loaded at the same time by one wrk each, so that both see the same machine (on a machine shared with
// other work, runs taken one after the other differ by more than the effect looked for).
// Usage: BENCH_DB=<a database bench/search.ts loaded and kept> bun run bench/search-ab.ts <treeA> <treeB> [seconds] [rounds]
//   Q=subject (default): Observation?subject=Patient/{id}&code=...; Q=empty: the same with unknown patients;
//   Q=name: Patient?name=<family> (bench/search.ts's second canonical search).
//   DELAY_MS=<ms>: each connection waits that long after each answer (wrk's delay()), so both nodes are
//   offered the same rate below what they can serve: CPU per request then compares at equal throughput
//   (at full load it grows as a node's rate falls: fewer requests share each wakeup of the event loop).
//   ENV_A / ENV_B: settings for one node only ('FHIR_RATE_LIMIT=0 SEARCH_STATEMENT_TIMEOUT_MS=0'), to A/B a
//   setting on one tree.
import { readFileSync, writeFileSync } from 'node:fs'
import { createSql } from '../shared/db/client'
import { type BenchServer, startBenchServer, wrk } from './server'
import { pathsScript } from './workload'

const [treeA, treeB] = [process.argv[2], process.argv[3]]
if (!treeA || !treeB || !process.env.BENCH_DB) throw new Error('usage: BENCH_DB=<db> bun run bench/search-ab.ts <treeA> <treeB> [seconds] [rounds]')
const seconds = Number(process.argv[4] ?? 20)
const rounds = Number(process.argv[5] ?? 4)
const connections = Number(process.env.CONNS ?? 8)

const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}

/** 'K=V K2=V2' as an environment. */
const envOf = (spec = '') =>
  Object.fromEntries(
    spec
      .split(/\s+/)
      .filter(Boolean)
      .map((kv) => kv.split('=', 2) as [string, string]),
  )

async function start(tree: string, port: number, env: Record<string, string>): Promise<BenchServer> {
  process.env.BENCH_TREE = tree
  const s = await startBenchServer(port, env)
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${s.base}/healthz`)).ok) break
    } catch {}
    await Bun.sleep(100)
  }
  return s
}

const a = await start(treeA, 18401, envOf(process.env.ENV_A))
const b = await start(treeB, 18402, envOf(process.env.ENV_B))
const sql = createSql(a.databaseUrl, { max: 2 })
try {
  const paths =
    process.env.Q === 'name'
      ? (
          await sql<{ family: string }[]>`
          select s.value_exact as family from resource r join idx_string s on s.rid = r.rid and s.code = 'family'
          where r.res_type = 'Patient' limit 200`
        ).map((p) => `/fhir/Patient?name=${encodeURIComponent(p.family)}`)
      : (process.env.Q === 'empty'
          ? Array.from({ length: 200 }, (_, i) => ({ id: `none-${i}` }))
          : await sql<{ id: string }[]>`
          select distinct ref.target_id as id from idx_reference ref join idx_token t on t.rid = ref.rid
          where ref.code = 'subject' and ref.res_type = 'Observation' and t.code = 'code' and t.value = '8302-2' limit 200`
        ).map((p) => `/fhir/Observation?subject=Patient/${p.id}&code=http://loinc.org|8302-2`)
  const script = pathsScript(`/tmp/bench-search-ab-${process.pid}.lua`, paths)
  if (process.env.DELAY_MS) writeFileSync(script, `${readFileSync(script, 'utf8')}delay = function()\n  return ${Number(process.env.DELAY_MS)}\nend\n`)
  const both = (s: number) => Promise.all([a, b].map((x) => wrk(`${x.base}/fhir/metadata`, { connections, seconds: s, script })))
  await both(10) // warm-up
  const total = { a: { cpu: 0, n: 0 }, b: { cpu: 0, n: 0 } }
  for (let r = 0; r < rounds; r++) {
    const c0 = [cpuSeconds(a.pid), cpuSeconds(b.pid)]
    const [ra, rb] = await both(seconds)
    const ca = cpuSeconds(a.pid) - c0[0]
    const cb = cpuSeconds(b.pid) - c0[1]
    total.a.cpu += ca
    total.a.n += ra.rps * seconds
    total.b.cpu += cb
    total.b.n += rb.rps * seconds
    const us = (cpu: number, rps: number) => Math.round((cpu * 1e6) / (rps * seconds))
    console.log(
      `round ${r}: A ${Math.round(ra.rps)} req/s ${us(ca, ra.rps)} µs | B ${Math.round(rb.rps)} req/s ${us(cb, rb.rps)} µs (errors ${ra.errors + rb.errors})`,
    )
  }
  const per = (t: { cpu: number; n: number }) => Math.round((t.cpu * 1e6) / t.n)
  const name = (tree: string, env?: string) => (env ? `${tree} ${env}` : tree)
  console.log(`server CPU per request: A (${name(treeA, process.env.ENV_A)}) ${per(total.a)} µs, B (${name(treeB, process.env.ENV_B)}) ${per(total.b)} µs`)
} finally {
  await sql.end()
  await a.stop()
  await b.stop()
}
