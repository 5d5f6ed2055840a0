// The $import job: each input streamed from its URL (ndjson-source.ts), line by line (ndjson-lines.ts),
// in batches written with their checkpoint (import-batch.ts): the byte offset and line number the next
// batch starts at, and the counts so far. A worker killed mid-file resumes at the last committed batch,
// so nothing is written twice (and a batch written again would change nothing: same content, no new
// version). While batches are written (import-pipeline.ts), the next is read and validated, across the
// inputs. Bad lines go to the job's error rows, rendered into one OperationOutcome NDJSON file per input
// at the end.
import type { TxSql } from '../db/client'
import { AppError } from '../errors'
import { type AdminJobKind, type AdminJobRun, JobCancelled } from '../jobs/admin-job'
import { BULK_IMPORT } from './bulk-job'
import type { BulkFileStore } from './file-store'
import { type BatchCounts, type ImportLine, lineOutcome, readImportLine } from './import-batch'
import { type BatchText, ImportPipeline } from './import-pipeline'
import type { ImportJobParams } from './import-kickoff'
import { InputRejected, ndjsonLines } from './ndjson-lines'
import { InputUnavailable, type OpenInput } from './ndjson-source'
import type { BulkConfig } from '../config'
import { nextTurn } from '../next-turn'

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
  /** The first input not done (batches of the next ones may be committed already); inputs.length
   *  once all are read. A resumed job skips the inputs marked done, whatever this says. */
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
/**
 * A line of this many characters or more is a batch of its own, which the pipeline writes with less or
 * nothing else in flight (ImportPipeline.commit): a line is held some 8 to 12 times over while its batch
 * is prepared and written (its text, the parsed resource, the stored JSON, the COPY text, index and
 * full-text rows), and batches of such lines, three in flight, grew a worker by 481 MB for twelve 15 MB
 * lines (bench/import-large-lines.ts).
 */
export const LARGE_LINE_CHARS = 1024 * 1024
/** Lines read between two turns of the event loop (10 rather than 50: see Repo.prepareCopy's PREPARE_SLICE). */
const YIELD_LINES = 10
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
        // Inputs already done are skipped; batches of one input are still written while the next is read.
        const pipeline = new ImportPipeline(run.repo)
        for (let index = 0; index < cursor.inputs.length; index++) await importInput(run, p, cursor, index, pipeline, config, open)
        await pipeline.drain()
        cursor.input = cursor.inputs.length
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

/** The first input not done (the one a resumed job reads first, the one its status names). */
function firstOpen(c: ImportCursor): number {
  const i = c.inputs.findIndex((p) => !p.done)
  return i < 0 ? c.inputs.length : i
}

/**
 * Reads one input from where its progress says, batch by batch, into the pipeline; its progress moves
 * with each commit, and its last batch's commit marks it done. Returns once its last batch is started.
 */
async function importInput(
  run: AdminJobRun,
  p: ImportJobParams,
  cursor: ImportCursor,
  index: number,
  pipeline: ImportPipeline,
  config: BulkConfig,
  open: OpenInput,
): Promise<void> {
  const progress = cursor.inputs[index]
  if (progress.done) return
  const fail = async (message: string) => {
    await pipeline.drain() // the checkpoint below is written outside the batches
    progress.failure = message
    progress.done = true
    cursor.input = firstOpen(cursor)
    // An AppError, so that the error file says why (a plain Error is rendered as "Internal server error").
    const outcome = lineOutcome(0, new AppError('unprocessable', message)).replace('Line 0: ', 'The input: ')
    await storeErrors(run.sql, run.id, index, cursor, [{ line: 0, outcome }])
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
  const commit = (items: ImportLine[], at: { offset: number; line: number }, last = false, text: BatchText = { chars: bytes, large: false }) =>
    pipeline.commit(
      items,
      async (tx, counts, bad) => {
        progress.created += counts.created
        progress.updated += counts.updated
        progress.unchanged += counts.unchanged
        progress.bytes = at.offset
        progress.lines = at.line
        if (last) progress.done = true
        cursor.input = firstOpen(cursor)
        await storeErrors(tx, run.id, index, cursor, bad)
        await run.checkpoint({ cursor, processed: linesOf(cursor) }, tx)
      },
      text,
    )
  try {
    for await (const l of lines) {
      if (l.text === undefined && l.problem === undefined) {
        end = { offset: l.end, line: l.number } // a blank line
        continue
      }
      // The event loop turns now and then: the batches in flight go on with their statements meanwhile.
      if (l.number % YIELD_LINES === 0) await nextTurn()
      const chars = l.text?.length ?? 0
      const item = readImportLine(l)
      l.text = undefined // the parsed resource is what is kept of it
      if (chars >= LARGE_LINE_CHARS) {
        // A large line is a batch of its own, written with nothing else in flight (ImportPipeline.commit).
        if (batch.length > 0) await commit(batch, end)
        batch = []
        keys = new Set()
        bytes = 0
        end = { offset: l.end, line: l.number }
        await commit([item], end, false, { chars, large: true })
        continue
      }
      // A resource twice in one batch would be two versions in one statement: the batch ends before it.
      if ('key' in item && keys.has(item.key)) {
        await commit(batch, end)
        batch = []
        keys = new Set()
        bytes = 0
      }
      batch.push(item)
      if ('key' in item) keys.add(item.key)
      bytes += chars
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
    return fail(err.message)
  }
  await commit(batch, end, true)
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
      // Ordered by the column, a number: `order by line` would name the selected text and sort 10 before 9.
      const rows = await run.sql<{ line: string; outcome: string }[]>`
        select e.line::text as line, e.outcome from bulk_import_error e
        where e.job_id = ${run.id} and e.input = ${input} and e.line > ${after} order by e.line limit 1000`
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
