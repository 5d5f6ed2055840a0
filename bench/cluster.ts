// Cluster read benchmark: GET /fhir/Patient/{id} at 32 connections (wrk) through nginx (deploy/nginx.conf,
// round robin over two API nodes on one database) against one node direct: the balancer's overhead.
// Usage: bun run bench/cluster.ts [seconds]   (needs nginx: apt-get install -y nginx)
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BenchServer, startBenchServer, wrk } from './server'
import { pathsScript, seedPatients } from './workload'

const seconds = Number(process.argv[2] ?? 10)
const nginxBin = Bun.which('nginx', { PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` })
if (!nginxBin) {
  console.error('nginx is not installed (apt-get install -y nginx)')
  process.exit(1)
}

const [portA, portB, portLb] = [18181, 18182, 18180]
const prefix = `bench_cluster_${Date.now().toString(36)}`
const dir = mkdtempSync(join(tmpdir(), 'fhir-bench-cluster-'))
let a: BenchServer | undefined
let b: BenchServer | undefined
let nginx: ReturnType<typeof Bun.spawn> | undefined
try {
  // Node A creates the database; node B joins it (same DATABASE_URL and QUEUE_PREFIX).
  a = await startBenchServer(portA, { QUEUE_PREFIX: prefix })
  b = await startBenchServer(portB, { DATABASE_URL: a.databaseUrl, QUEUE_PREFIX: prefix })
  mkdirSync(join(dir, 'logs'))
  mkdirSync(join(dir, 'tmp'))
  const conf = readFileSync(join(import.meta.dir, '../deploy/nginx.conf'), 'utf8')
    .replace('127.0.0.1:8081', `127.0.0.1:${portA}`)
    .replace('127.0.0.1:8082', `127.0.0.1:${portB}`)
    .replace('listen 127.0.0.1:8080', `listen 127.0.0.1:${portLb}`)
    .replace(/access_log [^;]+;/, 'access_log off;') // a log line per request is not the balancer's cost
  writeFileSync(join(dir, 'nginx.conf'), conf)
  nginx = Bun.spawn([nginxBin, '-p', dir, '-e', join(dir, 'logs/error.log'), '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], {
    stdout: 'inherit',
    stderr: 'inherit',
  })
  const lb = `http://127.0.0.1:${portLb}`
  for (
    let i = 0;
    i < 100 &&
    !(await fetch(`${lb}/healthz`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  )
    await Bun.sleep(50)

  const ids = await seedPatients(a.base)
  const script = pathsScript(
    join(dir, 'read.lua'),
    ids.map((id) => `/fhir/Patient/${id}`),
  )

  const run = async (base: string) => {
    await wrk(`${base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds: 3, script }) // warm-up
    return wrk(`${base}/fhir/Patient/${ids[0]}`, { connections: 32, seconds, script })
  }
  const direct = await run(a.base)
  const balanced = await run(lb)
  const line = (label: string, r: Awaited<ReturnType<typeof wrk>>) =>
    `${label}: ${Math.round(r.rps)} req/s at 32 connections, p50 ${r.p50} ms, p90 ${r.p90} ms, p99 ${r.p99} ms, errors ${r.errors}`
  console.log(line('read Patient/{id}, one API node direct', direct))
  console.log(line('read Patient/{id}, nginx round robin over two API nodes', balanced))
  console.log(
    `nginx + two nodes / one node direct: ${Math.round((100 * balanced.rps) / direct.rps)}% (${ids.length} Synthea patients, RSS A ${a.rssMb()} MB, B ${b.rssMb()} MB, ${navigator.hardwareConcurrency} cores shared by wrk, nginx, the nodes and PostgreSQL)`,
  )
} finally {
  nginx?.kill('SIGQUIT')
  await nginx?.exited
  await b?.stop() // drops nothing of A's: B's own database name was never created
  await a?.stop()
  rmSync(dir, { recursive: true, force: true })
}
