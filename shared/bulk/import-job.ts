// The $import job: each input streamed from its URL (ndjson-source.ts), line by line (ndjson-lines.ts),
// in batches written with their checkpoint (import-batch.ts): the byte offset and line number the next
// batch starts at, and the counts so far. A worker killed mid-file resumes at the last committed batch,
// so nothing is written twice (and a batch written again would change nothing: same content, no new
// version). While one batch is written, the next is read and validated. Bad lines go to the job's error
// rows, rendered into one OperationOutcome NDJSON file per input at the end.
import type { TxSql } from '../db/client'
import { type AdminJobKind, type AdminJobRun, JobCancelled } from '../jobs/admin-job'
import { BULK_IMPORT } from './bulk-job'
import type { BulkFileStore } from './file-store'
import { type BatchCounts, type ImportLine, lineOutcome, readImportLine, writeImportBatch } from './import-batch'
import type { ImportJobParams } from './import-kickoff'
import { InputRejected, ndjsonLines } from './ndjson-lines'
import { InputUnavailable, type OpenInput } from './ndjson-source'
import type { BulkConfig } from '../config'

export interface InputProgress extends BatchCounts {
  type: string
  url: string
  /** Bytes and lines read (through the last committed batch). */
  bytes: number
  lines: number
  /** The input's size when its server said it. */
  length?: number
  errors: number
  done: boolean
  /** Why the input could not be read to its end, when it could not. */
  failure?: string
}

interface ImportCursor {
  /** The input being read; inputs.length once all are read. */
  input: number
  inputs: InputProgress[]
  /** Error rows stored so far (at most MAX_STORED_ERRORS). */
  stored: number
}

export interface ErrorFile {
  id: string
  input: number
  count: number
  chunks: number
}

export interface ImportResult {
  inputs: InputProgress[]
  errorFiles: ErrorFile[]
}

/** A batch is cut at this much text even when it has fewer lines (memory: two batches are held). */
const BATCH_BYTES = 4 * 1024 * 1024
/** Error rows kept per job; more are counted, and the error file says how many were left out. */
export const MAX_STORED_ERRORS = 10_000
const ERROR_CHUNK_BYTES = 4 * 1024 * 1024

export function importJobKind(store: BulkFileStore, config: BulkConfig, open: OpenInput): AdminJobKind<ImportJobParams> {
  return {
    kind: BULK_IMPORT,
    async run(run, p) {
      try {
        const cursor: ImportCursor = (run.cursor as ImportCursor | undefined) ?? {
          input: 0,
          stored: 0,
          inputs: p.inputs.map((i) => ({ type: i.type, url: i.url, bytes: 0, lines: 0, errors: 0, created: 0, updated: 0, unchanged: 0, done: false })),
        }
        for (; cursor.input < cursor.inputs.length; cursor.input++) await importInput(run, p, cursor, config, open)
        const errorFiles = await renderErrorFiles(run, store, cursor)
        const done = linesOf(cursor)
        await run.checkpoint({ cursor, processed: done, total: done })
        return { inputs: cursor.inputs, errorFiles } satisfies ImportResult
      } catch (err) {
        if (err instanceof JobCancelled) await store.removeJob(run.id)
        throw err
      }
    },
  }
}

function linesOf(c: ImportCursor): number {
  return c.inputs.reduce((n, i) => n + i.lines, 0)
}

/** Reads one input from where the cursor says, batch by batch; the cursor moves with each commit. */
async function importInput(run: AdminJobRun, p: ImportJobParams, cursor: ImportCursor, config: BulkConfig, open: OpenInput): Promise<void> {
  const index = cursor.input
  const progress = cursor.inputs[index]
  if (progress.done) return
  const fail = async (message: string) => {
    progress.failure = message
    progress.done = true
    await storeErrors(run.sql, run.id, index, cursor, [{ line: 0, outcome: lineOutcome(0, new Error(message)).replace('Line 0: ', 'The input: ') }])
    await run.checkpoint({ cursor, processed: linesOf(cursor) })
  }
  let opened: Awaited<ReturnType<OpenInput>>
  try {
    opened = await open(p.inputs[index], progress.bytes)
  } catch (err) {
    if (err instanceof InputUnavailable) return fail(err.message)
    throw err // transient: the job is retried from its cursor
  }
  progress.length ??= opened.length
  const lines = ndjsonLines(opened.body, {
    maxLineBytes: config.importMaxLineBytes,
    maxInputBytes: config.importMaxInputBytes,
    offset: progress.bytes,
    linesBefore: progress.lines,
  })
  let batch: ImportLine[] = []
  let keys = new Set<string>()
  let bytes = 0
  let end = { offset: progress.bytes, line: progress.lines }
  // Two batches are written at once, so that the database works on one while the other waits on its
  // round trips. A batch starts once the one before holds its row locks (a resource in both waits for
  // the first to commit, never the other way round), and commits after it, its checkpoint last.
  let writing: Promise<void> | undefined
  let locked: Promise<void> | undefined
  const commit = async (items: ImportLine[], at: { offset: number; line: number }) => {
    const prior = writing
    await locked
    let lockedNow: () => void = () => {}
    locked = new Promise<void>((resolve) => {
      lockedNow = resolve
    })
    writing = (async () => {
      const good = items.filter((i): i is Extract<ImportLine, { key: string }> => 'key' in i)
      const bad = items.filter((i): i is Extract<ImportLine, { outcome: string }> => 'outcome' in i)
      try {
        await writeImportBatch(run.repo, good, lockedNow, async (tx, counts) => {
          await prior // the batch before has committed (when it failed, this one rolls back)
          progress.created += counts.created
          progress.updated += counts.updated
          progress.unchanged += counts.unchanged
          progress.bytes = at.offset
          progress.lines = at.line
          await storeErrors(tx, run.id, index, cursor, bad)
          await run.checkpoint({ cursor, processed: linesOf(cursor) }, tx)
        })
      } finally {
        lockedNow() // failed before its locks: the next one is not held up (it rolls back on `prior`)
      }
    })()
    writing.catch(() => {}) // handled where it is awaited: by the next commit, or at the end
    await prior
    collectGarbage(items.length)
  }
  try {
    for await (const l of lines) {
      if (l.text === undefined && l.problem === undefined) {
        end = { offset: l.end, line: l.number } // a blank line
        continue
      }
      const item = readImportLine(l)
      // A resource twice in one batch would be two versions in one statement: the batch ends before it.
      if ('key' in item && keys.has(item.key)) {
        await commit(batch, end)
        batch = []
        keys = new Set()
        bytes = 0
      }
      batch.push(item)
      if ('key' in item) keys.add(item.key)
      bytes += l.text?.length ?? 0
      end = { offset: l.end, line: l.number }
      if (batch.length >= p.batchSize || bytes >= BATCH_BYTES) {
        await commit(batch, end)
        batch = []
        keys = new Set()
        bytes = 0
      }
    }
  } catch (err) {
    if (!(err instanceof InputRejected)) throw err
    await commit(batch, end)
    await writing
    return fail(err.message)
  }
  await commit(batch, end)
  await writing
  progress.done = true
  await run.checkpoint({ cursor, processed: linesOf(cursor) })
}

/**
 * Memory stays flat whatever the input's size: batches of parsed resources are garbage once written, and
 * left to itself the JavaScript heap grows far past what is live before it collects. Measured on Synthea
 * x10 (135,000 resources): worker RSS growth 138-208 MB with no help, 102 MB with a collection asked
 * after each batch, 72 MB when every FULL_GC_LINES lines it is a full synchronous one (no CPU cost
 * measurable; a full one after every batch cost 45 µs per resource).
 */
let sinceFullGc = 0
const FULL_GC_LINES = 8000

function collectGarbage(lines: number): void {
  sinceFullGc += lines
  const full = sinceFullGc >= FULL_GC_LINES
  if (full) sinceFullGc = 0
  Bun.gc(full)
}

/** The batch's bad lines as error rows (a row written by an earlier attempt is kept as it is). */
async function storeErrors(
  tx: TxSql | AdminJobRun['sql'],
  jobId: string,
  input: number,
  cursor: ImportCursor,
  bad: { line: number; outcome: string }[],
): Promise<void> {
  if (bad.length === 0) return
  cursor.inputs[input].errors += bad.length
  const kept = bad.slice(0, Math.max(0, MAX_STORED_ERRORS - cursor.stored))
  cursor.stored += kept.length
  if (kept.length === 0) return
  const q = tx as TxSql
  await q`insert into bulk_import_error (job_id, input, line, outcome)
    select ${jobId}, ${input}, line, outcome from unnest(${kept.map((b) => b.line)}::bigint[], ${kept.map((b) => b.outcome)}::text[]) as e(line, outcome)
    on conflict do nothing`
}

/** One NDJSON file of OperationOutcomes per input that had errors, from the job's error rows. */
async function renderErrorFiles(run: AdminJobRun, store: BulkFileStore, cursor: ImportCursor): Promise<ErrorFile[]> {
  const files: ErrorFile[] = []
  for (const [input, progress] of cursor.inputs.entries()) {
    if (progress.errors === 0) continue
    const file: ErrorFile = { id: `errors-${input + 1}`, input, count: 0, chunks: 0 }
    let text = ''
    let after = -1
    const flush = async () => {
      if (text === '') return
      const chunk = text
      text = ''
      if (store.inDatabase) await run.sql.begin((tx) => store.putChunk(run.id, file.id, file.chunks, chunk, tx))
      else await store.putChunk(run.id, file.id, file.chunks, chunk)
      file.chunks++
    }
    for (;;) {
      const rows = await run.sql<{ line: string; outcome: string }[]>`
        select line::text, outcome from bulk_import_error where job_id = ${run.id} and input = ${input} and line > ${after} order by line limit 1000`
      for (const r of rows) {
        text += `${r.outcome}\n`
        file.count++
        if (text.length >= ERROR_CHUNK_BYTES) await flush()
      }
      if (rows.length < 1000) break
      after = Number(rows[rows.length - 1].line)
    }
    const left = progress.errors - file.count
    if (left > 0 && cursor.stored >= MAX_STORED_ERRORS) {
      text += `${JSON.stringify({ resourceType: 'OperationOutcome', issue: [{ severity: 'warning', code: 'too-costly', diagnostics: `${left} more lines of this input could not be stored; they are not listed (at most ${MAX_STORED_ERRORS} per job)` }] })}\n`
      file.count++
    }
    await flush()
    files.push(file)
  }
  await run.sql`delete from bulk_import_error where job_id = ${run.id}`
  return files
}
