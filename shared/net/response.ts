// The answer to an outbound call, read with a cap: a body larger than the call's limit is refused
// (a stream is cancelled, nothing past the limit is held), and a short excerpt can be read without
// taking the rest.
import { failureText, OutboundFailed } from './target'

export class OutboundResponse {
  constructor(
    private readonly res: Response,
    /** The URL that answered (after redirects). */
    readonly url: string,
    private readonly maxBytes: number,
    private readonly timeoutMs: number,
  ) {}

  get status(): number {
    return this.res.status
  }

  get ok(): boolean {
    return this.res.ok
  }

  get headers(): Headers {
    return this.res.headers
  }

  /** The whole body as text; OutboundFailed when it is larger than the call's limit. */
  async text(): Promise<string> {
    const declared = Number(this.res.headers.get('content-length') ?? Number.NaN)
    if (declared > this.maxBytes) {
      await this.discard()
      throw this.tooLarge()
    }
    const { bytes, complete } = await this.read(this.maxBytes)
    if (!complete) throw this.tooLarge()
    return new TextDecoder().decode(bytes)
  }

  async json(): Promise<any> {
    const text = await this.text()
    try {
      return JSON.parse(text)
    } catch {
      throw new OutboundFailed(`${new URL(this.url).origin} answered ${this.status} with a body that is not JSON`)
    }
  }

  /** At most `limit` bytes of the body (never an error for a longer one); the rest is not read. */
  async excerpt(limit: number): Promise<string> {
    const { bytes } = await this.read(limit).catch(() => ({ bytes: new Uint8Array() }))
    return new TextDecoder().decode(bytes).replace(/\uFFFD$/, '')
  }

  /**
   * The body as a stream, for a caller that reads it as it comes (a bulk import's NDJSON, far larger
   * than any text held whole): past the call's byte limit the stream errors and the transfer is cancelled.
   */
  stream(): ReadableStream<Uint8Array> {
    const reader = this.res.body?.getReader()
    let size = 0
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        if (!reader) return controller.close()
        let next: Awaited<ReturnType<typeof reader.read>>
        try {
          next = await reader.read()
        } catch (err) {
          return controller.error(new OutboundFailed(failureText(err, this.url, this.timeoutMs)))
        }
        if (next.done) return controller.close()
        size += next.value.byteLength
        if (size > this.maxBytes) {
          await reader.cancel().catch(() => {})
          return controller.error(this.tooLarge())
        }
        controller.enqueue(next.value)
      },
      cancel: async () => {
        await reader?.cancel().catch(() => {})
      },
    })
  }

  async discard(): Promise<void> {
    await this.res.body?.cancel().catch(() => {})
  }

  /** Reads up to `limit` bytes; `complete` is false when the body went on past them (then cancelled). */
  private async read(limit: number): Promise<{ bytes: Uint8Array; complete: boolean }> {
    const reader = this.res.body?.getReader()
    if (!reader) return { bytes: new Uint8Array(), complete: true }
    const chunks: Uint8Array[] = []
    let size = 0
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        const room = limit - size
        if (value.byteLength > room) {
          chunks.push(value.subarray(0, room))
          size += room
          await reader.cancel().catch(() => {})
          return { bytes: concat(chunks, size), complete: false }
        }
        chunks.push(value)
        size += value.byteLength
      }
    } catch (err) {
      throw new OutboundFailed(failureText(err, this.url, this.timeoutMs))
    }
    return { bytes: concat(chunks, size), complete: true }
  }

  private tooLarge(): OutboundFailed {
    return new OutboundFailed(`${new URL(this.url).origin} answered more than ${this.maxBytes} bytes (OUTBOUND_MAX_RESPONSE_BYTES)`)
  }
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]
  const out = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}
