// NDJSON lines from a byte stream, never holding more than one line: each line with its number and the
// byte offset just past it (where a resumed read starts). A line longer than the limit is reported and
// skipped unread, a line that is not UTF-8 reported; blank lines come without text or problem, a run of
// them as one (the last one's number and end): 100 MB of newlines, one object each through the
// generator, grew a worker by 200 MB (400 MB by 295 MB) for nothing.
// http://ndjson.org/  https://hl7.org/fhir/uv/bulkdata/STU2/export.html#file-format
import { AppError } from '../errors'

export interface NdjsonLine {
  /** 1-based, counted from the start of the input. */
  number: number
  /** Byte offset of the input just past this line's newline. */
  end: number
  /** The line's text; undefined when it is blank or could not be read (`problem` says why). */
  text?: string
  problem?: string
}

export interface LineLimits {
  maxLineBytes: number
  /** Bytes of the input read at most (from its start); more is an error of the input. */
  maxInputBytes: number
  /** Where the stream starts in the input, and how many lines came before it. */
  offset: number
  linesBefore: number
}

const NEWLINE = 0x0a

/** A failure of the input as a whole (too large): the input is given up, the import goes on. */
export class InputRejected extends AppError {
  constructor(message: string) {
    super('invalid', message)
  }
}

export async function* ndjsonLines(stream: ReadableStream<Uint8Array>, limits: LineLimits): AsyncGenerator<NdjsonLine> {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const reader = stream.getReader()
  let parts: Uint8Array[] = []
  let partBytes = 0
  let tooLong = false
  let offset = limits.offset
  let number = limits.linesBefore
  /** The blank lines read and not yet yielded, as the last of them. */
  let blank: NdjsonLine | undefined
  const line = (bytes: Uint8Array | undefined, end: number): NdjsonLine => {
    number++
    if (tooLong) return { number, end, problem: `The line is longer than the limit of ${limits.maxLineBytes} bytes (BULK_IMPORT_MAX_LINE_BYTES)` }
    let b = bytes as Uint8Array
    let n = b.byteLength
    if (n > 0 && b[n - 1] === 0x0d) n-- // CRLF
    if (isBlank(b, 0, n)) return { number, end }
    if (n !== b.byteLength) b = b.subarray(0, n)
    try {
      let text = decoder.decode(b)
      if (number === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1) // a byte order mark
      return { number, end, text }
    } catch {
      return { number, end, problem: 'The line is not valid UTF-8' }
    }
  }
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (offset + value.byteLength > limits.maxInputBytes)
        throw new InputRejected(`The input is larger than the limit of ${limits.maxInputBytes} bytes (BULK_IMPORT_MAX_INPUT_BYTES)`)
      let start = 0
      for (let nl = value.indexOf(NEWLINE); nl >= 0; nl = value.indexOf(NEWLINE, start)) {
        if (partBytes === 0 && !tooLong && isBlank(value, start, nl)) {
          blank = { number: ++number, end: offset + nl + 1 }
          start = nl + 1
          continue
        }
        if (blank) yield blank
        blank = undefined
        const piece = value.subarray(start, nl)
        const bytes = tooLong ? undefined : partBytes === 0 ? piece : join(parts, partBytes, piece)
        if (bytes && bytes.byteLength > limits.maxLineBytes) tooLong = true
        const next = line(bytes, offset + nl + 1)
        // Nothing of the line's bytes is held while the caller works on it (its parts, their join).
        parts = []
        partBytes = 0
        tooLong = false
        start = nl + 1
        yield next
      }
      if (start < value.byteLength && !tooLong) {
        // A line going on into the next chunk; copied, as the stream may reuse its buffer.
        const rest = value.slice(start)
        partBytes += rest.byteLength
        if (partBytes > limits.maxLineBytes) {
          tooLong = true
          parts = []
          partBytes = 0
        } else parts.push(rest)
      }
      offset += value.byteLength
    }
    if (blank) yield blank
    if (partBytes > 0 || tooLong) {
      yield line(tooLong ? undefined : join(parts, partBytes), offset)
    }
  } finally {
    reader.releaseLock()
    await stream.cancel().catch(() => {})
  }
}

function join(parts: Uint8Array[], size: number, last?: Uint8Array): Uint8Array {
  const out = new Uint8Array(size + (last?.byteLength ?? 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.byteLength
  }
  if (last) out.set(last, at)
  return out
}

/** Bytes `from` to `to` (excluded) are spaces, tabs and carriage returns only. */
function isBlank(b: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = b[i]
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false
  }
  return true
}
