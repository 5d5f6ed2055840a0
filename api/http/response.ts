// A Response for a body made after an await (every handler that reads the database).
//
// Bun 1.4.5 corks a socket only around the synchronous part of a request handler. A response that
// completes later is assembled in uWS's 16 KB cork buffer when it fits; when it does not, the status
// line and every header name, separator, value and line end leave as separate send() calls: 19 TCP
// segments for a search Bundle of 36 KB, each one waking the client (oven-sh/bun PR #41341, open).
// Measured on a bare Bun.serve answering 36 KB after an await: 7,400 req/s at 134 µs of server CPU each,
// against 38,600 req/s at 26 µs when the same body goes as a direct stream, which Bun writes with the
// head in one writev. So a large body goes as a direct stream: chunked transfer encoding for HTTP/1.1
// (an HTTP/1.0 client gets a body delimited by the connection's close), one send for the head and body
// and one for the last chunk. Small bodies keep the single corked send and their Content-Length.

/** Bodies up to this many bytes fit the cork buffer with their headers and go as they are. */
export const STREAM_ABOVE_BYTES = 12 * 1024

export function bodyResponse(body: string | null | undefined, init: { status: number; headers: Record<string, string> }): Response {
  if (!body || !isLarge(body)) return new Response(body ?? null, init)
  const stream = new ReadableStream({
    type: 'direct',
    pull(controller) {
      controller.write(body)
      controller.close()
    },
  })
  return new Response(stream, init)
}

function isLarge(body: string): boolean {
  // UTF-8 takes 1 to 3 bytes per UTF-16 unit: count the bytes only when the length leaves it open.
  if (body.length > STREAM_ABOVE_BYTES) return true
  return body.length * 3 > STREAM_ABOVE_BYTES && Buffer.byteLength(body) > STREAM_ABOVE_BYTES
}
