// Bundle importer: `bun run import <folder|file...> [--url URL] [--key KEY] [--concurrency N]` POSTs each
// JSON Bundle to the FHIR base, batch Bundles first (Synthea's hospital and practitioner files must exist
// before the patients that reference them), with a progress line on stderr and a summary on stdout.
// https://hl7.org/fhir/R4/http.html#transaction
// With --ndjson, the folders and files are NDJSON, imported through the server's $import (import-ndjson.ts).
// With neither --url nor a key, a running embedded server of this folder's DATA_DIR is found by its lock file.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'
import { liveOwnerOf } from '../shared/db/data-dir-owner'
import { runNdjsonImport } from './import-ndjson'

export interface BundleFile {
  path: string
  /** Bundle.type as read from the file. */
  type: string
  entries: number
  bytes: number
}

export interface BundleFailure {
  file: string
  /** HTTP status of the whole Bundle (0: no response), or of the entry for a batch entry. */
  status: number
  /** Entry index for a failed batch entry. */
  entry?: number
  diagnostics: string[]
}

export interface ImportPhase {
  label: 'batch' | 'transaction'
  bundles: number
  resources: number
  seconds: number
}

export interface ImportProgress {
  total: number
  done: number
  /** Entries written by finished Bundles (failed Bundles and failed batch entries excluded). */
  resources: number
  /** Failed Bundles plus failed batch entries. */
  errors: number
  seconds: number
}

export interface ImportReport extends ImportProgress {
  /** Bundles answered 200 with no failed entry. */
  ok: number
  failures: BundleFailure[]
  phases: ImportPhase[]
}

export interface ImportOptions {
  /** FHIR base, e.g. http://localhost:8080/fhir. */
  url: string
  key?: string
  concurrency: number
  onProgress?: (p: ImportProgress) => void
}

/** The Bundle files of folders (their *.json, by name) and files, batch Bundles first. */
export function listBundles(paths: string[]): BundleFile[] {
  const files = paths.flatMap((p) =>
    statSync(p).isDirectory()
      ? readdirSync(p)
          .filter((f) => f.endsWith('.json'))
          .sort()
          .map((f) => join(p, f))
      : [p],
  )
  const bundles = files.map((path) => {
    const text = readFileSync(path, 'utf8')
    const body = JSON.parse(text)
    if (body?.resourceType !== 'Bundle') throw new Error(`${path}: not a Bundle (resourceType ${body?.resourceType})`)
    return { path, type: String(body.type), entries: Array.isArray(body.entry) ? body.entry.length : 0, bytes: Buffer.byteLength(text) }
  })
  return [...bundles.filter((b) => b.type === 'batch'), ...bundles.filter((b) => b.type !== 'batch')]
}

/** POSTs the Bundles, batch ones first and all finished before the rest, at most `concurrency` at a time. */
export async function importBundles(bundles: BundleFile[], opts: ImportOptions): Promise<ImportReport> {
  const started = performance.now()
  const report: ImportReport = { total: bundles.length, done: 0, ok: 0, resources: 0, errors: 0, seconds: 0, failures: [], phases: [] }
  const tick = () => {
    report.seconds = (performance.now() - started) / 1000
    opts.onProgress?.(report)
  }
  tick()
  const groups: [ImportPhase['label'], BundleFile[]][] = [
    ['batch', bundles.filter((b) => b.type === 'batch')],
    ['transaction', bundles.filter((b) => b.type !== 'batch')],
  ]
  for (const [label, group] of groups) {
    if (group.length === 0) continue
    const phaseStart = performance.now()
    const resourcesBefore = report.resources
    let next = 0
    const client = async () => {
      while (next < group.length) {
        const bundle = group[next++]
        const outcome = await postBundle(bundle, opts)
        report.done++
        report.resources += outcome.resources
        report.errors += outcome.failures.length
        report.failures.push(...outcome.failures)
        if (outcome.failures.length === 0) report.ok++
        tick()
      }
    }
    await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency, group.length)) }, client))
    report.phases.push({ label, bundles: group.length, resources: report.resources - resourcesBefore, seconds: (performance.now() - phaseStart) / 1000 })
  }
  tick()
  return report
}

async function postBundle(bundle: BundleFile, opts: ImportOptions): Promise<{ resources: number; failures: BundleFailure[] }> {
  const file = basename(bundle.path)
  const headers: Record<string, string> = { 'content-type': 'application/fhir+json', accept: 'application/fhir+json' }
  if (opts.key) headers.authorization = `Bearer ${opts.key}`
  let res: Response
  try {
    // No idle timeout: a large Bundle is answered only when a worker has written all of it.
    res = await fetch(opts.url, { method: 'POST', headers, body: Bun.file(bundle.path), timeout: false })
  } catch (err) {
    return { resources: 0, failures: [{ file, status: 0, diagnostics: [String((err as Error)?.message ?? err)] }] }
  }
  const text = await res.text()
  let body: any
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  if (res.status !== 200 || body?.resourceType !== 'Bundle') {
    return { resources: 0, failures: [{ file, status: res.status, diagnostics: body ? diagnosticsOf(body) : [text.slice(0, 500)] }] }
  }
  // A batch answers 200 with one outcome per entry; a transaction is all or nothing.
  const failures: BundleFailure[] = []
  let resources = 0
  for (const [i, e] of (body.entry ?? []).entries()) {
    const status = Number.parseInt(String(e?.response?.status ?? ''), 10)
    if (status >= 200 && status < 300) resources++
    else
      failures.push({ file, status: Number.isNaN(status) ? 0 : status, entry: i, diagnostics: e?.response?.outcome ? diagnosticsOf(e.response.outcome) : [] })
  }
  return { resources, failures }
}

function diagnosticsOf(outcome: any): string[] {
  if (outcome?.resourceType !== 'OperationOutcome') return [JSON.stringify(outcome).slice(0, 500)]
  return (outcome.issue ?? []).map((i: any) => i.diagnostics ?? i.details?.text ?? i.code ?? '')
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

export function progressLine(p: ImportProgress): string {
  const rate = p.seconds > 0 ? p.resources / p.seconds : 0
  return `bundles ${p.done}/${p.total}  resources ${fmt(p.resources)}  ${fmt(rate)} resources/s  errors ${p.errors}  ${p.seconds.toFixed(1)} s`
}

/** A progress callback drawing one line on stderr: in place on a terminal, every few seconds otherwise. */
export function stderrProgress(): (p: ImportProgress) => void {
  const tty = process.stderr.isTTY
  let last = 0
  let finished = false
  return (p) => {
    const now = performance.now()
    const final = p.done === p.total
    if (finished) return
    finished = final
    if (tty) {
      if (now - last < 100 && !final) return
      last = now
      process.stderr.write(`\r\x1b[2K${progressLine(p)}${final ? '\n' : ''}`)
    } else if (now - last > 5000 || final) {
      last = now
      process.stderr.write(`${progressLine(p)}\n`)
    }
  }
}

interface Args {
  paths: string[]
  url: string
  key?: string
  concurrency: number
  ndjson: boolean
  urlGiven?: boolean
}

const USAGE = 'usage: bun run import [--ndjson] <folder|file...> [--url http://localhost:8080/fhir] [--key KEY] [--concurrency 2]'

function parseArgs(argv: string[]): Args {
  const args: Args = {
    paths: [],
    url: 'http://localhost:8080/fhir',
    key: process.env.FHIR_API_KEY || process.env.ADMIN_API_KEY || undefined,
    concurrency: 2,
    ndjson: false,
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined]
    const value = () => {
      const v = inline ?? argv[++i]
      if (v === undefined) throw new Error(`${flag} needs a value`)
      return v
    }
    if (flag === '--url') {
      args.url = value().replace(/\/+$/, '')
      args.urlGiven = true
    } else if (flag === '--key') args.key = value()
    else if (flag === '--concurrency') {
      args.concurrency = Number(value())
      if (!Number.isInteger(args.concurrency) || args.concurrency < 1) throw new Error('--concurrency must be a positive integer')
    } else if (flag === '--ndjson') args.ndjson = true
    else if (flag === '--help' || flag === '-h') {
      console.log(USAGE)
      process.exit(0)
    } else if (flag.startsWith('-')) throw new Error(`unknown option ${flag}`)
    else args.paths.push(a)
  }
  if (args.paths.length === 0) throw new Error('no folder or file given')
  return args
}

/**
 * On this machine's embedded server (no DATABASE_URL, a live owner of DATA_DIR): its URL when no --url was
 * given, and the local token of its lock file when no key was (shared/db/data-dir-owner.ts).
 */
function useLocalOwner(args: Args): void {
  if (process.env.DATABASE_URL) return
  const owner = liveOwnerOf(process.env.DATA_DIR || '.data/pglite')
  if (!owner?.url) return
  if (!args.urlGiven) args.url = `${owner.url}/fhir`
  if (!args.key && owner.token && args.url.startsWith(owner.url)) args.key = owner.token
}

if (import.meta.main) {
  let args: Args
  try {
    args = parseArgs(process.argv.slice(2))
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`)
    process.exit(2)
  }
  useLocalOwner(args)
  if (args.ndjson) process.exit(await runNdjsonImport(args.paths, { url: args.url, key: args.key }))
  const bundles = listBundles(args.paths)
  const entries = bundles.reduce((n, b) => n + b.entries, 0)
  process.stderr.write(`${bundles.length} bundles, ${fmt(entries)} entries -> ${args.url} (concurrency ${args.concurrency})\n`)
  const report = await importBundles(bundles, { url: args.url, key: args.key, concurrency: args.concurrency, onProgress: stderrProgress() })
  for (const f of report.failures) {
    const where = f.entry === undefined ? '' : ` entry ${f.entry}`
    console.error(`FAILED ${f.file}${where}: ${f.status || 'no response'} ${f.diagnostics.join(' | ')}`)
  }
  for (const ph of report.phases)
    console.log(
      `${ph.label}: ${ph.bundles} bundles, ${fmt(ph.resources)} resources in ${ph.seconds.toFixed(1)} s (${fmt(ph.resources / ph.seconds)} resources/s)`,
    )
  console.log(
    `imported ${report.ok}/${report.total} bundles, ${fmt(report.resources)} resources in ${report.seconds.toFixed(1)} s (${fmt(report.resources / report.seconds)} resources/s), ${report.errors} errors`,
  )
  process.exit(report.errors > 0 ? 1 : 0)
}
