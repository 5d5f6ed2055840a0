// The $import write path in process, without the API node, the queue or the HTTP origin: NDJSON lines
// read and validated (readImportLine), written batch after batch (writeImportBatch, no overlap) into a
// fresh database. Prints the CPU per resource of this process and of the database's PostgreSQL backends:
// an A/B of a write-path change in a few minutes, less noisy than bench/bulk-import.ts.
// Usage: bun run bench/import-write.ts [ndjsonDir=/tmp/bench-bulk-import-x10] [maxLines]
//   NOCOPY=1: new resources written with the statement's CTEs instead of COPY; BATCH=<n> lines a batch
//   (500); PERF=<file>: `perf record` of the backends meanwhile; SIZES=1: rows per table; KEEP=1: the
//   database is kept.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../shared/config'
import { createSql } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'
import { createRepo } from '../shared/fhir/store'
import { readImportLine, writeImportBatch } from '../shared/bulk/import-batch'

const dir = process.argv[2] ?? '/tmp/bench-bulk-import-x10'
const limit = Number(process.argv[3] ?? 1e9)
const pg = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432'
const db = `bench_import_write_${Date.now().toString(36)}`
const admin = createSql(`${pg}/postgres`, { max: 1 })
await admin`create database ${admin(db)}`
const url = `${pg}/${db}`
const sql = createSql(url, { max: 4 })
await migrate(sql)
const config = loadConfig({ ...process.env, DATABASE_URL: url })
const repo = await createRepo(sql, config)
if (process.env.NOCOPY) (repo as any).collaborators.indexes.copyIndexes = undefined
const cpuOf = (pid: number) => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(f[11]) + Number(f[12])) / 100
  } catch {
    return 0
  }
}
const pids = async () => (await admin<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${db}`).map((r) => r.pid)
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.ndjson'))
  .sort()
const lines: any[] = []
let n = 0
for (const f of files) {
  const text = readFileSync(join(dir, f), 'utf8')
  let off = 0
  for (const t of text.split('\n')) {
    if (!t) continue
    if (n >= limit) break
    lines.push({ text: t, number: ++n, end: (off += t.length + 1) })
  }
}
// warm
await writeImportBatch(
  repo,
  [readImportLine({ text: JSON.stringify({ resourceType: 'Basic', id: 'w', code: { text: 'w' } }), number: 1, end: 1 } as any) as any],
  () => {},
  async () => {},
)
const p0 = new Map((await pids()).map((p) => [p, cpuOf(p)]))
let perf: any
if (process.env.PERF) {
  perf = Bun.spawn(['perf', 'record', '-F', '499', '-g', '-o', process.env.PERF, '-p', [...p0.keys()].join(',')], { stdout: 'ignore', stderr: 'ignore' })
  await Bun.sleep(500)
}
const c0 = process.cpuUsage()
const t0 = performance.now()
let workerPrep = 0
const B = Number(process.env.BATCH ?? 500)
for (let i = 0; i < lines.length; i += B) {
  const a = process.cpuUsage()
  const items = lines.slice(i, i + B).map((l) => readImportLine(l)) as any[]
  const d = process.cpuUsage(a)
  workerPrep += d.user + d.system
  await writeImportBatch(
    repo,
    items,
    () => {},
    async () => {},
  )
}
const secs = (performance.now() - t0) / 1000
if (perf) {
  perf.kill('SIGINT')
  await perf.exited
}
const c = process.cpuUsage(c0)
let pgc = 0
for (const p of await pids()) pgc += cpuOf(p) - (p0.get(p) ?? 0)
console.log(
  `${lines.length} resources in ${secs.toFixed(1)} s (${Math.round(lines.length / secs)}/s): worker ${Math.round((c.user + c.system) / lines.length)} µs (read+validate ${Math.round(workerPrep / lines.length)}), PG ${Math.round((pgc * 1e6) / lines.length)} µs`,
)
if (process.env.SIZES) {
  const rows = await sql`select relname, n_live_tup from pg_stat_user_tables where relname like 'idx_%' or relname like 'resource%' order by 1`
  for (const r of rows) console.log(r.relname, r.n_live_tup, (Number(r.n_live_tup) / lines.length).toFixed(2))
  const sz =
    await sql`select relname, pg_size_pretty(pg_total_relation_size(oid)) s from pg_class where relname like 'idx_%' or relname like 'resource%' and relkind in ('r','i') order by pg_total_relation_size(oid) desc limit 40`
  for (const r of sz) console.log(r.relname, r.s)
}
await sql.end()
if (!process.env.KEEP) await admin`drop database ${admin(db)} with (force)`
else console.log('kept', db)
await admin.end()
process.exit(0)
