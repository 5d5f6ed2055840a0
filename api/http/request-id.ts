// The request id: the client's X-Request-Id when it is a sane token, else a new UUID. Echoed in the
// X-Request-Id response header and in error envelopes (`error.request_id`).

const SANE = /^[A-Za-z0-9._:-]{8,128}$/

export function requestIdOf(request: Request): string {
  const given = request.headers.get('x-request-id')
  return given && SANE.test(given) ? given : crypto.randomUUID()
}
