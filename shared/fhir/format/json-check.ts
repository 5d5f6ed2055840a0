// What JSON.parse lets through and FHIR JSON must not carry: an object naming one key twice (JSON.parse
// keeps the last, silently; https://hl7.org/fhir/R4/json.html "no duplicate properties"), and the NUL
// character (`\u0000`, which PostgreSQL cannot store in text or jsonb).
import { invalid } from '../../errors'

/**
 * Throws 400 for a duplicate key or an escaped NUL in `text`, which JSON.parse read as `parsed`. Cheap on
 * the way every body goes: the keys JSON.parse kept are counted against the `":` of the text (about 1 ms
 * per MB); only when they differ (a duplicate, or a `":` inside a string value) is the text scanned.
 */
export function checkJsonText(text: string, parsed: unknown): void {
  if (text.includes('\\u0000') && /(?<!\\)(?:\\\\)*\\u0000/.test(text))
    throw invalid('The JSON holds a NUL character (\\u0000), which FHIR strings cannot contain')
  if (keyMarks(text) === keysOf(parsed) && !spaceBeforeColon(text)) return
  const key = duplicateKey(text)
  if (key !== undefined) throw invalid(`HAPI-1861: Failed to parse JSON encoded FHIR content: the same property "${key}" appears twice in one object`)
}

/**
 * Whether JSON whitespace stands right before a colon anywhere (a key written `"a" : 1` has no `":` mark, so
 * the counts could hide a duplicate). Four native searches: a third of the cost of /"\s+:/ on Synthea
 * Bundles, where none occurs (ingest's worker runs every Bundle through here).
 */
function spaceBeforeColon(text: string): boolean {
  return text.includes(' :') || text.includes('\n:') || text.includes('\t:') || text.includes('\r:')
}

/** Occurrences of `":` in the text: one per key, plus any inside string values. */
function keyMarks(text: string): number {
  let n = 0
  for (let i = text.indexOf('":'); i >= 0; i = text.indexOf('":', i + 2)) n++
  return n
}

/** Keys of every object in a parsed value (a decimal kept as written is a value, not an object). */
function keysOf(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0
  let n = 0
  if (Array.isArray(v)) {
    for (const x of v) if (x !== null && typeof x === 'object') n += keysOf(x)
    return n
  }
  if (JSON.isRawJSON(v)) return 0
  for (const k in v) {
    n++
    const x = (v as Record<string, unknown>)[k]
    if (x !== null && typeof x === 'object') n += keysOf(x)
  }
  return n
}

const BACKSLASH = 92
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125

/**
 * The first key an object of `text` (valid JSON) names twice, or undefined. Jumps from quote to quote (indexOf), so
 * it only looks at the few characters between strings; keys are kept per open object, in a Set made
 * only for objects with more than a handful of keys.
 */
function duplicateKey(text: string): string | undefined {
  const stack: (string[] | Set<string>)[] = []
  let i = 0
  for (;;) {
    const q = text.indexOf('"', i)
    const stop = q < 0 ? text.length : q
    for (let j = i; j < stop; j++) {
      const c = text.charCodeAt(j)
      if (c === OPEN_OBJECT) stack.push([])
      else if (c === CLOSE_OBJECT) stack.pop()
    }
    if (q < 0) return undefined
    let end = text.indexOf('"', q + 1)
    while (end > 0 && isEscaped(text, end)) end = text.indexOf('"', end + 1)
    if (end < 0) return undefined
    let k = end + 1
    while (k < text.length && text.charCodeAt(k) <= 32) k++
    if (text.charCodeAt(k) === 58 /* : */ && stack.length > 0) {
      const name = text.slice(q + 1, end)
      const top = stack.length - 1
      const keys = stack[top]
      if (Array.isArray(keys)) {
        if (keys.includes(name)) return name
        keys.push(name)
        if (keys.length > 16) stack[top] = new Set(keys)
      } else {
        if (keys.has(name)) return name
        keys.add(name)
      }
    }
    i = end + 1
  }
}

function isEscaped(text: string, quote: number): boolean {
  let n = 0
  for (let j = quote - 1; j >= 0 && text.charCodeAt(j) === BACKSLASH; j--) n++
  return n % 2 === 1
}
