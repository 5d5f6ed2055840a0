// Opens an $import input as a byte stream, from a byte offset (a resumed import asks for the rest with
// Range and skips what a server sends again when it ignores it): a file uploaded to this server is read
// from the file store (upload.ts); a URL is fetched through the one outbound client (shared/net: the
// resolved address checked and pinned, internal ones refused unless OUTBOUND_ALLOW names them), from
// origins on BULK_IMPORT_ORIGINS only, redirects refused (a redirect could lead anywhere), abandoned when
// it sends nothing, or no line end, for BULK_IMPORT_IDLE_TIMEOUT_MS.
import type { Config } from '../config'
import { AppError } from '../errors'
import { Outbound } from '../net/client'
import type { OutboundResponse } from '../net/response'
import { OutboundRefused } from '../net/target'
import type { BulkFileStore } from './file-store'
import { UPLOAD_FILE, type Upload } from './upload'

export interface OpenedInput {
  body: ReadableStream<Uint8Array>
  /** The input's size in bytes when the server said it. */
  length?: number
}

/** One input of an $import: its type and URL (import-kickoff.ts reads them from the request). */
export interface ImportInput {
  type: string
  url: string
  /** A file uploaded to this server (the url names it), read from the file store. */
  upload?: Upload
}

export type OpenInput = (input: ImportInput, from: number) => Promise<OpenedInput>

/** A refusal that retrying cannot change (not allowed, not found...): the input is reported as failed. */
export class InputUnavailable extends AppError {
  constructor(message: string) {
    super('invalid', message)
  }
}

/** The origin check of kick-off and worker alike: 400 naming the setting. */
export function assertAllowedInput(url: string, origins: readonly string[]): URL {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new InputUnavailable(`Input URL "${url}" is not a valid URL`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InputUnavailable(`Input URL "${url}" is not http(s)`)
  if (u.username || u.password) throw new InputUnavailable(`Input URL "${u.origin}..." carries credentials, which are not accepted`)
  if (!origins.includes(u.origin)) throw new InputUnavailable(`Input URL origin ${u.origin} is not on the import allow-list (BULK_IMPORT_ORIGINS)`)
  return u
}

/** A whole input may take this long to read (its idle and line-end rules end a stuck one much sooner). */
const INPUT_DEADLINE_MS = 24 * 3600_000

export function openInput(config: Pick<Config, 'bulk' | 'outboundAllow' | 'outboundTimeoutMs' | 'outboundMaxResponseBytes'>, store: BulkFileStore): OpenInput {
  const fetchUrl = urlOpener(config)
  return async (input, from) =>
    input.upload
      ? { body: skipFirst(store.read(input.upload.id, UPLOAD_FILE, input.upload.chunks), from), length: input.upload.bytes }
      : fetchUrl(input.url, from)
}

function urlOpener(
  config: Pick<Config, 'bulk' | 'outboundAllow' | 'outboundTimeoutMs' | 'outboundMaxResponseBytes'>,
): (url: string, from: number) => Promise<OpenedInput> {
  const outbound = Outbound.fromConfig(config)
  const idleMs = config.bulk.importIdleTimeoutMs
  return async (url, from) => {
    const u = assertAllowedInput(url, config.bulk.importOrigins)
    // The idle timer runs only while a read waits on the server (not while a batch is being written).
    const abort = new AbortController()
    let timer = setTimeout(() => abort.abort(), idleMs)
    const headers: Record<string, string> = { accept: 'application/fhir+ndjson, application/ndjson;q=0.9, */*;q=0.1' }
    if (from > 0) headers.range = `bytes=${from}-`
    let res: OutboundResponse
    try {
      res = await outbound.fetch(u.toString(), {
        headers,
        timeoutMs: INPUT_DEADLINE_MS,
        // BULK_IMPORT_MAX_INPUT_BYTES is enforced by the line reader (ndjson-lines.ts), on the offset in the
        // whole input, as a failure of this input alone (InputRejected): the call's own cap failed the read
        // first, as an error of the call, and the job retried it until it failed whole.
        maxResponseBytes: Number.MAX_SAFE_INTEGER,
        signal: abort.signal,
      })
    } catch (err) {
      clearTimeout(timer)
      if (err instanceof OutboundRefused) throw new InputUnavailable(`${u.origin}${u.pathname}: ${err.message}`)
      throw new Error(`Could not fetch ${u.origin}${u.pathname}: ${(err as Error).message}`) // transient: retried
    }
    if (res.status >= 300 && res.status < 400) {
      clearTimeout(timer)
      await res.discard()
      throw new InputUnavailable(`${u.origin}${u.pathname} answered ${res.status} (a redirect): redirects are not followed`)
    }
    if (res.status !== 200 && res.status !== 206) {
      clearTimeout(timer)
      await res.discard()
      const message = `${u.origin}${u.pathname} answered ${res.status}`
      if (res.status >= 500 || res.status === 429 || res.status === 408) throw new Error(message) // transient: retried
      throw new InputUnavailable(message)
    }
    clearTimeout(timer)
    const declared = Number(res.headers.get('content-length') ?? Number.NaN)
    const start = res.status === 206 ? Number(/^bytes (\d+)-/.exec(res.headers.get('content-range') ?? '')?.[1] ?? Number.NaN) : 0
    if (Number.isNaN(start) || start > from) {
      await res.discard()
      throw new Error(`${u.origin}${u.pathname} answered a range that does not start at ${from}`)
    }
    const reader = res.stream().getReader()
    // Reading time without a line end: a server that trickles bytes (never idle, never a line) is given up
    // too. Only time spent waiting on the server counts.
    let sinceLine = 0
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        let next: Awaited<ReturnType<typeof reader.read>>
        timer = setTimeout(() => abort.abort(), idleMs)
        const asked = performance.now()
        try {
          next = await reader.read()
        } catch (err) {
          const why = abort.signal.aborted ? `nothing received for ${idleMs} ms` : (err as Error).message
          return controller.error(new Error(`Reading ${u.origin}${u.pathname} failed: ${why}`))
        } finally {
          clearTimeout(timer)
        }
        if (next.done) return controller.close()
        sinceLine = next.value.includes(0x0a) ? 0 : sinceLine + (performance.now() - asked)
        if (sinceLine > idleMs) {
          abort.abort()
          return controller.error(new Error(`Reading ${u.origin}${u.pathname} failed: no line end received for ${idleMs} ms`))
        }
        controller.enqueue(next.value)
      },
      cancel() {
        clearTimeout(timer)
        abort.abort()
        reader.cancel().catch(() => {})
      },
    })
    // A server that ignored the Range sends from the start again: those bytes are dropped.
    return { body: skipFirst(body, from - start), length: Number.isNaN(declared) ? undefined : declared + start }
  }
}

/** The stream without its first `bytes` bytes. */
function skipFirst(stream: ReadableStream<Uint8Array>, bytes: number): ReadableStream<Uint8Array> {
  if (bytes <= 0) return stream
  let skip = bytes
  return stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const drop = Math.min(skip, chunk.byteLength)
        skip -= drop
        if (drop < chunk.byteLength) controller.enqueue(chunk.subarray(drop))
      },
    }),
  )
}
