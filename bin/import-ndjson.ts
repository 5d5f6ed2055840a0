// `bun run import --ndjson <folder|file...>`: local NDJSON files through the server's $import, the same
// path as an import from URLs (validation, batches with checkpoints, error files). Each file is uploaded
// to the server in parts of whole lines ($bulk-upload, never read whole), then one $import names them
// all; a progress bar follows the job's per-file progress (/admin/jobs) until its manifest is ready.
// A summary per file goes to stdout, the lines that were not stored (file and line number) to stderr.
import { readdirSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'

export interface NdjsonFile {
  path: string
  type: string
  bytes: number
}

export interface NdjsonOptions {
  /** FHIR base, e.g. http://localhost:8080/fhir. */
  url: string
  key?: string
  onProgress?: (p: NdjsonProgress) => void
  /** Bytes per upload request at most (whole lines; PART_BYTES by default). */
  partBytes?: number
}

export interface NdjsonProgress {
  phase: 'upload' | 'import'
  /** Bytes uploaded, or read by the import, of `bytes`. */
  done: number
  bytes: number
  /** Lines the import has read. */
  lines: number
  seconds: number
  /** The last report: the job is done. */
  final?: boolean
}

export interface NdjsonReport {
  files: { path: string; type: string; created: number; updated: number; unchanged: number; errors: number; failure?: string }[]
  /** The lines not stored: file, line, why. */
  errors: { path: string; line: number; diagnostics: string }[]
  seconds: number
}

/** Parts of at most this many bytes (whole lines; a longer line is a part of its own). */
const PART_BYTES = 16 * 1024 * 1024
const RESOURCE_TYPE = /"resourceType"\s*:\s*"([A-Za-z]+)"/

/** The NDJSON files of folders (*.ndjson, by name) and files, each with the type its first line names. */
export async function listNdjson(paths: string[]): Promise<NdjsonFile[]> {
  const files = paths.flatMap((p) =>
    statSync(p).isDirectory()
      ? readdirSync(p)
          .filter((f) => f.endsWith('.ndjson'))
          .sort()
          .map((f) => join(p, f))
      : [p],
  )
  return Promise.all(
    files.map(async (path) => {
      const head = await Bun.file(path)
        .slice(0, 64 * 1024)
        .text()
      const type = RESOURCE_TYPE.exec(head)?.[1] ?? /^([A-Z][A-Za-z]+)/.exec(basename(path))?.[1]
      if (!type) throw new Error(`${path}: no resourceType in its first line, nor a type in its name`)
      return { path, type, bytes: statSync(path).size }
    }),
  )
}

export async function importNdjson(files: NdjsonFile[], opts: NdjsonOptions): Promise<NdjsonReport> {
  const started = performance.now()
  const seconds = () => (performance.now() - started) / 1000
  const headers: Record<string, string> = opts.key ? { authorization: `Bearer ${opts.key}` } : {}
  const total = files.reduce((n, f) => n + f.bytes, 0)
  let sent = 0
  const urls: string[] = []
  for (const f of files) {
    urls.push(
      await upload(f.path, opts.url, headers, opts.partBytes ?? PART_BYTES, (n) => {
        sent += n
        opts.onProgress?.({ phase: 'upload', done: sent, bytes: total, lines: 0, seconds: seconds() })
      }),
    )
  }
  const body = {
    resourceType: 'Parameters',
    parameter: [
      { name: 'inputFormat', valueCode: 'application/fhir+ndjson' },
      ...files.map((f, i) => ({
        name: 'input',
        part: [
          { name: 'type', valueCode: f.type },
          { name: 'url', valueUri: urls[i] },
        ],
      })),
    ],
  }
  const kickOff = await fetch(`${opts.url}/$import`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/fhir+json', prefer: 'respond-async' },
    body: JSON.stringify(body),
  })
  if (kickOff.status !== 202) throw new Error(`$import: ${kickOff.status} ${await kickOff.text()}`)
  await kickOff.arrayBuffer()
  const status = kickOff.headers.get('content-location') as string
  const jobUrl = `${new URL(opts.url).origin}/admin/jobs/${new URL(status).searchParams.get('_jobId')}`
  let manifest: any
  for (;;) {
    const res = await fetch(status, { headers })
    if (res.status === 200) {
      manifest = await res.json()
      break
    }
    if (res.status !== 202) throw new Error(`${status}: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
    const job = (await (await fetch(jobUrl, { headers })).json()) as any
    const inputs: { bytes: number; lines: number }[] = job?.cursor?.inputs ?? []
    opts.onProgress?.({
      phase: 'import',
      done: inputs.reduce((n, i) => n + i.bytes, 0),
      bytes: total,
      lines: inputs.reduce((n, i) => n + i.lines, 0),
      seconds: seconds(),
    })
    await Bun.sleep(250)
  }
  const report: NdjsonReport = {
    files: manifest.output.map((o: any, i: number) => ({
      path: files[i].path,
      type: o.type,
      created: o.created,
      updated: o.updated,
      unchanged: o.unchanged,
      errors: 0,
      ...(o.failure ? { failure: o.failure } : {}),
    })),
    errors: [],
    seconds: seconds(),
  }
  for (const e of manifest.error) {
    const i = urls.indexOf(e.inputUrl)
    const text = await (await fetch(e.url, { headers })).text()
    for (const line of text.split('\n').filter(Boolean)) {
      const issue = JSON.parse(line).issue?.[0] ?? {}
      const at = /^Line\[(\d+)\]$/.exec(issue.location?.[0] ?? '')
      report.errors.push({ path: files[i]?.path ?? e.inputUrl, line: at ? Number(at[1]) : 0, diagnostics: issue.diagnostics ?? '' })
    }
    if (report.files[i]) report.files[i].errors = e.count
  }
  opts.onProgress?.({
    phase: 'import',
    done: total,
    bytes: total,
    lines: report.files.reduce((n, f) => n + f.created + f.updated + f.unchanged + f.errors, 0),
    seconds: report.seconds,
    final: true,
  })
  return report
}

/** Uploads a file in parts of whole lines; returns the URL the server keeps it under. */
async function upload(path: string, base: string, headers: Record<string, string>, partBytes: number, sent: (bytes: number) => void): Promise<string> {
  let url: string | undefined
  const send = async (part: Uint8Array) => {
    const id = url?.split('/').at(-2)
    const res = await fetch(`${base}/$bulk-upload${id ? `?upload=${id}` : ''}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/fhir+ndjson' },
      body: part,
    })
    if (res.status !== 201 && res.status !== 200) throw new Error(`${path}: upload failed: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
    url = res.headers.get('location') as string
    sent(part.byteLength)
  }
  let pending: Uint8Array[] = []
  let size = 0
  for await (const chunk of Bun.file(path).stream()) {
    pending.push(chunk)
    size += chunk.byteLength
    if (size < partBytes) continue
    const all = Buffer.concat(pending)
    const cut = all.lastIndexOf(0x0a) + 1 // whole lines (so whole characters) in each part
    if (cut === 0) continue
    await send(all.subarray(0, cut))
    pending = [all.subarray(cut)]
    size = all.byteLength - cut
  }
  if (size > 0 || !url) await send(Buffer.concat(pending))
  return url as string
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

export function progressBar(p: NdjsonProgress, width = 30): string {
  const share = p.bytes > 0 ? Math.min(1, p.done / p.bytes) : 1
  const filled = Math.round(share * width)
  const rate = p.phase === 'import' && p.seconds > 0 ? `  ${fmt(p.lines / p.seconds)} lines/s` : ''
  const mb = (n: number) => (n / 1048576).toFixed(1)
  const what = p.phase === 'upload' ? `uploading ${mb(p.done)} of ${mb(p.bytes)} MB` : `${fmt(p.lines)} lines`
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.floor(share * 100)}%  ${what}${rate}  ${p.seconds.toFixed(1)} s`
}

/** A progress callback drawing the bar on stderr: in place on a terminal, every few seconds otherwise. */
export function stderrBar(): (p: NdjsonProgress) => void {
  const tty = process.stderr.isTTY
  let last = 0
  let phase = ''
  return (p) => {
    const now = performance.now()
    const changed = p.phase !== phase
    if (tty) {
      if (!changed && !p.final && now - last < 100) return
      process.stderr.write(`${changed && phase ? '\n' : '\r'}\x1b[2K${progressBar(p)}`)
    } else if (changed || p.final || now - last > 5000) process.stderr.write(`${progressBar(p)}\n`)
    last = now
    phase = p.phase
  }
}

/** The CLI's --ndjson mode; returns the exit code (1 when some line or file was not stored). */
export async function runNdjsonImport(paths: string[], opts: { url: string; key?: string }): Promise<number> {
  const files = await listNdjson(paths)
  process.stderr.write(`${files.length} NDJSON files, ${(files.reduce((n, f) => n + f.bytes, 0) / 1048576).toFixed(1)} MB -> ${opts.url}/$import\n`)
  const report = await importNdjson(files, { ...opts, onProgress: stderrBar() })
  if (process.stderr.isTTY) process.stderr.write('\n')
  for (const e of report.errors.slice(0, 100)) console.error(`NOT STORED ${e.path}${e.line ? `:${e.line}` : ''}: ${e.diagnostics}`)
  if (report.errors.length > 100) console.error(`... and ${report.errors.length - 100} more`)
  for (const f of report.files)
    console.log(
      `${f.path} (${f.type}): ${fmt(f.created)} created, ${fmt(f.updated)} updated, ${fmt(f.unchanged)} unchanged, ${fmt(f.errors)} not stored${f.failure ? ` (${f.failure})` : ''}`,
    )
  const stored = report.files.reduce((n, f) => n + f.created + f.updated + f.unchanged, 0)
  console.log(
    `imported ${fmt(stored)} resources from ${files.length} files in ${report.seconds.toFixed(1)} s (${fmt(stored / report.seconds)} resources/s), ${report.errors.length} lines not stored`,
  )
  return report.errors.length > 0 || report.files.some((f) => f.failure) ? 1 : 0
}
