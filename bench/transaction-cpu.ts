// The worker's CPU per resource for Synthea transactions, without HTTP or queues: the transaction
// processor a worker runs (parse, check, resolve, extract, write) on each synthea-smart Bundle's text, in
// this process, against a fresh database. Process CPU (every thread: the JIT compiler's too) per
// resource for each pass over the 47 Bundles: the first pass is a fresh worker's, later ones a warm one's;
// PostgreSQL's CPU beside it. Run it as the `worker` script runs a worker:
//   MIMALLOC_PURGE_DELAY=1000 BUN_JSC_useFTLJIT=false bun run bench/transaction-cpu.ts [passes]
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../shared/config'
import { createSql, ensureDatabase } from '../shared/db/client'
import { migrate } from '../shared/db/migrate'
import { prepareFhirDefinitions } from '../shared/fhir/prepare'
import { createRepo } from '../shared/fhir/store'
import { dataPath } from '../tests/data'
import { cpuSecondsOf } from './server'
import { transactionProcessor } from '../workers/transaction'

const passes = Number(process.argv[2] ?? 3)
const pg = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432'
const db = `bench_txcpu_${Date.now().toString(36)}`
prepareFhirDefinitions()
await ensureDatabase(`${pg}/${db}`)
const sql = createSql(`${pg}/${db}`, { max: 4 })
try {
  await migrate(sql)
  const config = loadConfig({ DATABASE_URL: `${pg}/${db}`, LOG_LEVEL: 'error' })
  const repo = await createRepo(sql, config)
  const run = transactionProcessor(repo, config, 'bench-secret')
  const dir = dataPath('synthea-smart')
  const texts = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => readFileSync(join(dir, f), 'utf8'))
  const entries = texts.reduce((n, t) => n + JSON.parse(t).entry.length, 0)
  for (let pass = 1; pass <= passes; pass++) {
    const pg0 = cpuSecondsOf('postgres')
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    // two at a time, as a worker with concurrency 2 takes them
    let next = 0
    const lane = async () => {
      while (next < texts.length) {
        const i = next++
        await run({ body: texts[i], baseUrl: 'http://localhost/fhir' }, { id: `${db}-${pass}-${i}`, progress: () => {} })
      }
    }
    await Promise.all([lane(), lane()])
    const cpu = process.cpuUsage(cpu0)
    const pg = ((cpuSecondsOf('postgres') - pg0) * 1e6) / entries
    console.log(
      `pass ${pass}: ${((cpu.user + cpu.system) / entries).toFixed(0)} µs CPU per resource (user ${(cpu.user / entries).toFixed(0)}, system ${(cpu.system / entries).toFixed(0)}), PostgreSQL ${pg.toFixed(0)} µs; ${Math.round(entries / ((performance.now() - t0) / 1000))} resources/s, ${entries} resources`,
    )
  }
} finally {
  await sql.end()
  const admin = createSql(pg, { max: 1 })
  await admin.unsafe(`drop database if exists ${db}`)
  await admin.end()
}
