// Search value escaping: `\,` `\$` `\|` `\\` stand for the literal characters.
// https://hl7.org/fhir/R4/search.html#escaping

/** Splits on unescaped `sep`, leaving escapes in the parts (split again on another separator). */
export function splitEscaped(value: string, sep: string): string[] {
  const out: string[] = []
  let cur = ''
  for (let i = 0; i < value.length; i++) {
    const c = value[i]
    if (c === '\\' && i + 1 < value.length) {
      cur += c + value[i + 1]
      i++
    } else if (c === sep) {
      out.push(cur)
      cur = ''
    } else cur += c
  }
  out.push(cur)
  return out
}

/** Removes escapes: `\,` -> `,`. */
export function unescape(value: string): string {
  return value.replace(/\\([\\,$|])/g, '$1')
}

/**
 * A query value as written when its `+` was not percent-encoded: form decoding turned it into a space
 * (`application/fhir+ndjson`, a `+02:00` zone typed into curl). For values that hold no space of their
 * own (instants, dates, media types); HAPI's DateRangeParam reads dates the same way.
 */
export function unencodedPlus(value: string): string {
  return value.replace(/ /g, '+')
}
