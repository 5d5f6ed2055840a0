// A local HTTP origin serving NDJSON for $import tests: files by path, Range requests answered with 206
// (or ignored, to test a server that sends the whole file again), a redirect, a 404, and a file that
// stops sending after a while on its first request (an idle input, read again from the checkpoint).
import type { Server } from 'bun'

export interface NdjsonOrigin {
  origin: string
  /** Serves `text` at `path` (e.g. /patients.ndjson). */
  put(path: string, text: string): string
  /** Requests seen, with their Range header. */
  requests: { path: string; range: string | null }[]
  /** `path` sends its first `bytes` bytes and then nothing, on its first request only. */
  stallOnce(path: string, bytes: number): void
  /** `path` sends one byte every 50 ms and never a line end, on its first request only. */
  trickleOnce(path: string): void
  /** Range headers are ignored (the whole file is sent with 200). */
  ignoreRange: boolean
  stop(): void
}

export function startNdjsonOrigin(): NdjsonOrigin {
  const files = new Map<string, Uint8Array>()
  const stalls = new Map<string, number>()
  const trickles = new Set<string>()
  const requests: NdjsonOrigin['requests'] = []
  const state = { ignoreRange: false }
  const server: Server<undefined> = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(req) {
      const url = new URL(req.url)
      const range = req.headers.get('range')
      requests.push({ path: url.pathname, range })
      if (url.pathname === '/redirect') return new Response(null, { status: 302, headers: { location: `${url.origin}/patients.ndjson` } })
      const file = files.get(url.pathname)
      if (!file) return new Response('not found', { status: 404 })
      if (trickles.delete(url.pathname)) {
        let timer: ReturnType<typeof setInterval>
        return new Response(
          new ReadableStream({
            start(controller) {
              timer = setInterval(() => controller.enqueue(new Uint8Array([0x20])), 50)
            },
            cancel() {
              clearInterval(timer)
            },
          }),
          { headers: { 'content-type': 'application/fhir+ndjson' } },
        )
      }
      const stall = stalls.get(url.pathname)
      if (stall !== undefined) {
        stalls.delete(url.pathname)
        return new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(file.subarray(0, stall)) // and then nothing, ever
            },
          }),
          { headers: { 'content-type': 'application/fhir+ndjson' } },
        )
      }
      const m = range && !state.ignoreRange ? /^bytes=(\d+)-$/.exec(range) : null
      if (m) {
        const from = Number(m[1])
        return new Response(file.subarray(from), {
          status: 206,
          headers: { 'content-type': 'application/fhir+ndjson', 'content-range': `bytes ${from}-${file.byteLength - 1}/${file.byteLength}` },
        })
      }
      return new Response(file, { headers: { 'content-type': 'application/fhir+ndjson' } })
    },
  })
  const origin = `http://127.0.0.1:${server.port}`
  return {
    origin,
    requests,
    get ignoreRange() {
      return state.ignoreRange
    },
    set ignoreRange(v: boolean) {
      state.ignoreRange = v
    },
    put(path, text) {
      files.set(path, new TextEncoder().encode(text))
      return `${origin}${path}`
    },
    stallOnce(path, bytes) {
      stalls.set(path, bytes)
    },
    trickleOnce(path) {
      trickles.add(path)
    },
    stop() {
      server.stop(true)
    },
  }
}

/** Resources as NDJSON text. */
export function ndjson(resources: unknown[]): string {
  return resources.map((r) => `${JSON.stringify(r)}\n`).join('')
}

/** The Parameters body of an $import of `inputs`. */
export function importBody(inputs: { type: string; url: string }[], extra: unknown[] = []): unknown {
  return {
    resourceType: 'Parameters',
    parameter: [
      { name: 'inputFormat', valueCode: 'application/fhir+ndjson' },
      { name: 'inputSource', valueUri: 'http://example.org/source' },
      ...extra,
      ...inputs.map((i) => ({
        name: 'input',
        part: [
          { name: 'type', valueCode: i.type },
          { name: 'url', valueUri: i.url },
        ],
      })),
    ],
  }
}
