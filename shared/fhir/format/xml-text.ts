// Character data the parser hands over raw (fast-xml-parser runs with `processEntities: false`): the
// five predefined entities and character references decoded, nothing else expanded, attribute values
// normalized, and the checks XMLValidator leaves out. https://www.w3.org/TR/xml/#sec-references
import { xmlError } from './xml-error'

const ATTR_SPECIAL = /[&<\t\n\r]/

/**
 * An attribute's value from its raw text. https://www.w3.org/TR/xml/#AVNormalize: literal whitespace
 * becomes a space, then references are replaced. XMLValidator does not look inside values, so '<' is
 * refused here.
 */
export function attributeValue(raw: string, qname: string): string {
  if (!ATTR_SPECIAL.test(raw)) return raw
  if (raw.includes('<')) throw xmlError(`'<' is not allowed in the value of attribute ${qname}`)
  const value = raw.replace(/\r\n?|[\t\n]/g, ' ')
  return value.includes('&') ? decode(value) : value
}

/** Text from its raw source (the parser has already normalized line ends). */
export function textValue(raw: string): string {
  if (raw.includes(']]>')) throw xmlError(`']]>' is not allowed in text`)
  return raw.includes('&') ? decode(raw) : raw
}

/**
 * Checks what XMLValidator leaves unchecked in content the parser keeps raw (a stop node): references
 * in text and attribute values, '<' in attribute values, ']]>' in text. The validator has already
 * matched the tags, comments, CDATA sections and quotes.
 */
export function checkRawContent(raw: string): void {
  const skipTo = (close: string, from: number): number => {
    const end = raw.indexOf(close, from)
    if (end < 0) throw xmlError(`unterminated markup, '${close}' expected`)
    return end + close.length
  }
  for (let i = 0; i < raw.length; ) {
    const lt = raw.indexOf('<', i)
    const textEnd = lt < 0 ? raw.length : lt
    if (textEnd > i) textValue(raw.slice(i, textEnd))
    if (lt < 0) break
    const c = raw.charCodeAt(lt + 1)
    if (c === 33 /* ! */) i = raw.startsWith('<!--', lt) ? skipTo('-->', lt + 4) : skipTo(']]>', lt + 2)
    else if (c === 63 /* ? */) i = skipTo('?>', lt + 2)
    else if (c === 47 /* / */) i = skipTo('>', lt + 2)
    else {
      // A start tag: its quoted parts are the attribute values.
      let p = lt + 1
      let from = p
      for (;;) {
        if (p >= raw.length) throw xmlError('unterminated start tag')
        const q = raw.charCodeAt(p)
        if (q === 62 /* > */) break
        if (q !== 34 && q !== 39) {
          p++
          continue
        }
        const close = skipTo(q === 34 ? '"' : "'", p + 1) - 1
        const value = raw.slice(p + 1, close)
        if (ATTR_SPECIAL.test(value)) attributeValue(value, /([^\s=]+)\s*=\s*$/.exec(raw.slice(from, p))?.[1] ?? '')
        from = p = close + 1
      }
      i = p + 1
    }
  }
}

// A Map, not an object literal: `&constructor;` must not find Object.prototype.constructor.
const PREDEFINED = new Map([
  ['lt', '<'],
  ['gt', '>'],
  ['amp', '&'],
  ['quot', '"'],
  ['apos', "'"],
])

/** Replaces the five predefined entities and character references; any other entity is an error. */
function decode(s: string): string {
  return s.replace(/&([^;&]*);?/g, (m, ref: string) => {
    if (!m.endsWith(';')) throw xmlError(`'&' must start an entity or character reference`)
    const named = PREDEFINED.get(ref)
    if (named) return named
    let code = NaN
    if (/^#[0-9]+$/.test(ref)) code = Number(ref.slice(1))
    else if (/^#x[0-9a-fA-F]+$/.test(ref)) code = Number.parseInt(ref.slice(2), 16)
    else throw xmlError(`undefined entity &${ref};`)
    // https://www.w3.org/TR/xml/#NT-Char
    const ok =
      code === 9 ||
      code === 10 ||
      code === 13 ||
      (code >= 0x20 && code <= 0xd7ff) ||
      (code >= 0xe000 && code <= 0xfffd) ||
      (code >= 0x10000 && code <= 0x10ffff)
    if (!ok) throw xmlError(`character reference &${ref}; is not a legal XML character`)
    return String.fromCodePoint(code)
  })
}
