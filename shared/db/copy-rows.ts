// Rows written with COPY ... FROM STDIN (text format) instead of an INSERT: PostgreSQL parses each line
// straight into the table's column types and writes the heap a page at a time (heap_multi_insert, one
// WAL record per page), where INSERT ... SELECT from text parameters splits the parameters into a
// tuplestore, casts each value and inserts row by row. For a bulk import's fresh rows (import-batch.ts).
import type { TxSql } from './client'

/** The text of one value in COPY's text format: \N for null, backslash, tab, newline and CR escaped. */
function field(v: unknown): string {
  if (v === null || v === undefined) return '\\N'
  let s: string
  if (typeof v === 'string') s = v
  else if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '\\N'
  else if (typeof v === 'boolean') return v ? 't' : 'f'
  else if (v instanceof Date) return v.toISOString()
  else s = JSON.stringify(v) // a raw JSON number keeps its text
  return NEEDS_ESCAPE.test(s) ? s.replace(ESCAPED, escape) : s
}

const NEEDS_ESCAPE = /[\\\t\n\r]/
const ESCAPED = /[\\\t\n\r]/g
const escape = (c: string): string => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r')

/** Text sent to the server at a time (the stream copies each piece once into a CopyData message). */
const CHUNK_CHARS = 256 * 1024

/**
 * COPY `rows` into `table` (`columns` named in order; `keys` the properties of each row object giving
 * them, in the same order). Resolves once the server has taken every row; rejects with its error (a
 * unique violation, a cancel) otherwise.
 */
export function copyRows(tx: TxSql, table: string, columns: readonly string[], rows: readonly object[], keys: readonly string[] = columns): Promise<void> {
  return copyText(tx, table, columns, copyPieces(rows, keys))
}

/**
 * The COPY text of `rows` (`keys` the properties giving the columns, in order), in pieces of about
 * CHUNK_CHARS: CPU only, so that it can be built before the transaction that sends it (import-batch.ts).
 * Each piece is joined from its lines at once: appended line by line (`text += line`), a piece was a
 * string of thousands of parts that the COPY's UTF-8 encoding then had to flatten first.
 */
export function copyPieces(rows: readonly object[], keys: readonly string[]): string[] {
  const lineOf = lineBuilder(keys)
  const pieces: string[] = []
  let lines: string[] = []
  let chars = 0
  for (const row of rows) {
    const line = lineOf(row)
    lines.push(line)
    chars += line.length + 1
    if (chars >= CHUNK_CHARS) {
      lines.push('')
      pieces.push(lines.join('\n'))
      lines = []
      chars = 0
    }
  }
  if (lines.length > 0) {
    lines.push('')
    pieces.push(lines.join('\n'))
  }
  return pieces
}

const builders = new Map<string, (row: object) => string>()

/**
 * The function that writes a row's line for `keys`, compiled once per list of keys: each property read
 * by its own name (`row.rid`), so each read site sees one shape of row, where a loop reading `row[keys[k]]`
 * sees every table's keys at one site and looks each up slowly. The keys are the code's own column
 * lists (never input), written into the source as JSON strings.
 */
function lineBuilder(keys: readonly string[]): (row: object) => string {
  const id = keys.join('\u0000')
  let build = builders.get(id)
  if (!build) {
    const body = keys.map((k) => `field(row[${JSON.stringify(k)}])`).join(" + '\\t' + ")
    build = new Function('field', `return (row) => ${body}`)(field) as (row: object) => string
    builders.set(id, build)
  }
  return build
}

/** COPY text (copyPieces) as it is written to the stream: small pieces joined into about CHUNK_CHARS each. */
export function copyChunks(pieces: readonly string[]): string[] {
  const chunks: string[] = []
  let group: string[] = []
  let chars = 0
  for (const piece of pieces) {
    group.push(piece)
    chars += piece.length
    if (chars >= CHUNK_CHARS) {
      chunks.push(group.length === 1 ? group[0] : group.join(''))
      group = []
      chars = 0
    }
  }
  if (group.length > 0) chunks.push(group.length === 1 ? group[0] : group.join(''))
  return chunks
}

/** Sends COPY text (copyPieces) into `table`'s `columns`; resolves once the server has taken it all. */
export async function copyText(tx: TxSql, table: string, columns: readonly string[], pieces: readonly string[]): Promise<void> {
  if (pieces.length === 0) return
  const stream = await tx`copy ${tx(table)} (${tx(columns as string[])}) from stdin`.writable()
  const done = new Promise<void>((resolve, reject) => {
    stream.on('finish', resolve)
    stream.on('error', reject)
  })
  // Pieces prepared in slices are small: sent as pieces of about CHUNK_CHARS, not a message each.
  for (const chunk of copyChunks(pieces)) {
    // A far longer one (a large resource's line) in slices of CHUNK_CHARS: the connection encodes each
    // message into a buffer of its own that it keeps at its largest (postgres.js copyData), and a 15 MB
    // line left 15 to 45 MB there for good, in each connection of the pool that wrote one.
    if (chunk.length <= 2 * CHUNK_CHARS) {
      stream.write(chunk)
      continue
    }
    for (let at = 0; at < chunk.length; ) {
      let to = Math.min(at + CHUNK_CHARS, chunk.length)
      if (to < chunk.length && isHighSurrogate(chunk.charCodeAt(to - 1))) to-- // a pair is never split
      stream.write(chunk.slice(at, to))
      at = to
    }
  }
  stream.end()
  await done
}

const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff
