// The path of a request URL as `new URL(url).pathname` says it, without parsing the URL when its path
// cannot change in parsing (the per-request hooks, metrics and the queue dashboard's guard, read it on
// every request: a URL parse is about half a µs of each).

/** Characters the WHATWG URL parser leaves as they are in a path (no dot segments, percent-escapes or
 *  backslashes: those, and anything else, go through the parser). */
const KEPT = new Uint8Array(128)
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~/!$&'()*+,;=:@") KEPT[c.charCodeAt(0)] = 1

export function pathOf(url: string): string {
  const scheme = url.indexOf('://')
  if (scheme < 0) return new URL(url).pathname
  // The path starts at the first slash after the authority; a query, fragment or backslash before it: parsed.
  let start = scheme + 3
  for (; start < url.length; start++) {
    const c = url.charCodeAt(start)
    if (c === 47) break // /
    if (c === 63 || c === 35 || c === 92) return new URL(url).pathname // ? # \
  }
  if (start === url.length) return new URL(url).pathname
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i)
    if (c === 63 || c === 35) return url.slice(start, i) // ? or #
    if (c >= 128 || KEPT[c] === 0) return new URL(url).pathname
  }
  return url.slice(start)
}
