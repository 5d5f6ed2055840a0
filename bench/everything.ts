// $everything benchmark: the 48 synthea-smart patients loaded through transaction Bundles, then
// GET /fhir/Patient/{id}/$everything for the largest (705 resources): first-page and next-page latency
// (p50/p95, sequential requests, _count=100 as the patient API's default) with the snapshot built
// inline, the same through the patient API's export (GET /patients/{id}/$everything, the Patient
// linked to an organization's patient_id), and again with EXPORT_INLINE_MAX=0 so that the
// export-cache worker builds every snapshot; then the type level over every patient.
// Usage: bun run bench/everything.ts [rounds]
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { dataPath } from '../tests/data'
import { patientIdSystem } from '../shared/patients/identifier'
import { BENCH_ENCRYPTION_KEY, BENCH_KEY, SERVER_ENV, startBenchServer, WORKER_ENV } from './server'

const rounds = Number(process.argv[2] ?? 200)
const LARGEST = 'Austin_Franecki_f23eef30-acb2-49da-8091-159b61dc1ed5.json'
const headers = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json' }

const server = await startBenchServer(18090, { PATIENT_API_RATE_LIMIT: '0' })
const db = new URL(server.databaseUrl).pathname.slice(1)
const env = {
  ...process.env,
  ...SERVER_ENV,
  DATABASE_URL: server.databaseUrl,
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  QUEUE_PREFIX: db,
  ADMIN_API_KEY: BENCH_KEY,
  TOKEN_ENCRYPTION_KEY: BENCH_ENCRYPTION_KEY,
  LOG_LEVEL: 'warn',
}
const cwd = `${import.meta.dir}/..`
const worker = Bun.spawn(['bun', 'run', 'workers/main.ts'], { cwd, env: { ...env, ...WORKER_ENV }, stdout: 'ignore', stderr: 'inherit' })
const viaWorker = Bun.spawn(['bun', 'run', 'api/main.ts'], { cwd, env: { ...env, PORT: '18091', EXPORT_INLINE_MAX: '0' }, stdout: 'ignore', stderr: 'inherit' })
try {
  const dir = dataPath('synthea-smart')
  let patientId = ''
  let loaded = 0
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const res = await fetch(`${server.base}/fhir`, { method: 'POST', headers, body: readFileSync(join(dir, f), 'utf8') })
    if (res.status !== 200) throw new Error(`load ${f}: ${res.status} ${(await res.text()).slice(0, 300)}`)
    const body = (await res.json()) as any
    loaded += body.entry.length
    if (f === LARGEST)
      patientId = body.entry
        .map((e: any) => e.response.location)
        .find((l: string) => l.startsWith('Patient/'))
        .split('/')[1]
  }
  console.log(`loaded ${loaded} resources of ${readdirSync(dir).length} Synthea patients`)
  const fhirPath = `/fhir/Patient/${patientId}/$everything?_count=100`
  await measure('FHIR Patient/{id}/$everything, inline snapshot', server.base, fhirPath, headers)
  const orgKey = await linkToOrganization(patientId)
  await measure('patient API /patients/{id}/$everything, inline snapshot', server.base, '/patients/bench_1/$everything?_count=100', {
    authorization: `Bearer ${orgKey}`,
  })
  await waitUp('http://127.0.0.1:18091')
  await measure('FHIR Patient/{id}/$everything, EXPORT_INLINE_MAX=0 (export-cache worker)', 'http://127.0.0.1:18091', fhirPath, headers, Math.min(rounds, 50))
  // Type level over every patient: where the inline limit matters (decides EXPORT_INLINE_MAX's default).
  for (const [label, base] of [
    ['EXPORT_INLINE_MAX=5000 (default)', server.base],
    ['EXPORT_INLINE_MAX=0', 'http://127.0.0.1:18091'],
  ]) {
    const times: number[] = []
    let total = 0
    for (let i = 0; i < 12; i++) {
      const t0 = performance.now()
      const text = await getText(`${base}/fhir/Patient/$everything?_count=100`)
      if (i >= 2) times.push(performance.now() - t0)
      total = JSON.parse(text).total
    }
    console.log(
      `Patient/$everything (type level, ${total} resources, snapshot by the worker), ${label}: first page p50 ${pct(times, 50)} ms, p95 ${pct(times, 95)} ms`,
    )
  }
} finally {
  viaWorker.kill('SIGTERM')
  worker.kill('SIGTERM')
  await Promise.all([viaWorker.exited, worker.exited])
  await server.stop()
}

/** An organization, its key, and its patient `bench_1` linked to the FHIR Patient by the patient-id identifier. */
async function linkToOrganization(patientId: string): Promise<string> {
  const post = async (path: string, body: unknown, auth = BENCH_KEY) => {
    const res = await fetch(`${server.base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    if (res.status !== 200 && res.status !== 201) throw new Error(`${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as any
  }
  const org = await post('/admin/organizations', { name: 'Bench' })
  const key = (await post(`/admin/organizations/${org.id}/api-keys`, { label: 'bench' })).key as string
  await post('/patients', { patient_id: 'bench_1' }, key)
  const patient = JSON.parse(await getText(`${server.base}/fhir/Patient/${patientId}`, headers))
  patient.identifier = [...(patient.identifier ?? []), { system: patientIdSystem(org.id), value: 'bench_1' }]
  const res = await fetch(`${server.base}/fhir/Patient/${patientId}`, { method: 'PUT', headers, body: JSON.stringify(patient) })
  if (res.status !== 200) throw new Error(`link: ${res.status} ${await res.text()}`)
  return key
}

async function measure(label: string, base: string, path: string, auth: Record<string, string>, n = rounds): Promise<void> {
  const first: number[] = []
  const next: number[] = []
  let total = 0
  let pages = 0
  for (let i = 0; i < n + 5; i++) {
    const t0 = performance.now()
    const text = await getText(`${base}${path}`, auth)
    if (i >= 5) first.push(performance.now() - t0)
    let bundle = JSON.parse(text)
    total = bundle.total
    pages = 1
    for (let url = nextLink(bundle); url; url = nextLink(bundle)) {
      const t1 = performance.now()
      const page = await getText(url.replace(/^https?:\/\/[^/]+/, base), auth)
      if (i >= 5) next.push(performance.now() - t1)
      bundle = JSON.parse(page)
      pages++
    }
  }
  console.log(
    `${label}: ${total} resources in ${pages} pages of 100; first page p50 ${pct(first, 50)} ms, p95 ${pct(first, 95)} ms; ` +
      `next page p50 ${pct(next, 50)} ms, p95 ${pct(next, 95)} ms (${first.length} exports)`,
  )
}

/** The response body (timed up to the last byte; parsed after). */
async function getText(url: string, auth: Record<string, string> = headers): Promise<string> {
  const res = await fetch(url, { headers: auth })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text.slice(0, 300)}`)
  return text
}

function nextLink(b: any): string | undefined {
  return b.link.find((l: any) => l.relation === 'next')?.url
}

function pct(xs: number[], p: number): string {
  const s = [...xs].sort((a, b) => a - b)
  return (s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN).toFixed(1)
}

async function waitUp(base: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) return
    } catch {}
    await Bun.sleep(100)
  }
  throw new Error(`${base} did not start`)
}
