// Checks of one JSON value against an R4 primitive type: the JSON type the spec maps it to, then its
// lexical form. Returns a constant message (no allocation) or undefined when the value is valid.
// https://hl7.org/fhir/R4/datatypes.html#primitive  https://hl7.org/fhir/R4/json.html#primitive
import { getTypeDef } from '../definitions/elements'
import { decimalValue } from '../format/json'
import { narrativeProblem } from '../format/xhtml-check'

export type PrimitiveCheck = (value: unknown) => string | undefined

// The regexes in the definitions are XML Schema / Java regexes, where \s is ASCII whitespace only;
// JavaScript's \s also matches NBSP and other Unicode spaces, so the string-like checks below are
// written as loops over the ASCII whitespace set instead of reusing those regexes.
function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0b || c === 0x0c
}

const INT_MIN = -2147483648
const INT_MAX = 2147483647

function integerIn(min: number, message: string): PrimitiveCheck {
  return (v) => (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= INT_MAX ? undefined : message)
}

// string, markdown: any JSON string but the empty one (JSON has no empty values).
const checkString: PrimitiveCheck = (v) => (typeof v !== 'string' ? 'must be a JSON string' : v.length === 0 ? 'must not be an empty string' : undefined)

// code: "[^\s]+(\s[^\s]+)*": no leading, trailing or doubled whitespace.
const checkCode: PrimitiveCheck = (v) => {
  if (typeof v !== 'string') return 'must be a JSON string'
  const n = v.length
  if (n === 0) return 'must not be an empty string'
  if (isSpace(v.charCodeAt(0)) || isSpace(v.charCodeAt(n - 1))) return 'must not have leading or trailing whitespace'
  for (let i = 1; i < n; i++)
    if (isSpace(v.charCodeAt(i)) && (v.charCodeAt(i) !== 0x20 || isSpace(v.charCodeAt(i - 1))))
      return 'must not contain consecutive whitespace or whitespace other than a single space'
  return undefined
}

// uri, url, canonical: "\S*", and not empty in JSON.
const checkUri: PrimitiveCheck = (v) => {
  if (typeof v !== 'string') return 'must be a JSON string'
  if (v.length === 0) return 'must not be an empty string'
  for (let i = 0; i < v.length; i++) if (isSpace(v.charCodeAt(i))) return 'must not contain whitespace'
  return undefined
}

// base64Binary: "(\s*([0-9a-zA-Z\+/=]){4}\s*)+". A loop, since attachments can be megabytes and a
// backtracking regex over them is slow; counts non-whitespace characters in groups of four.
const checkBase64: PrimitiveCheck = (v) => {
  if (typeof v !== 'string') return 'must be a JSON string'
  let count = 0
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i)
    if ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2b || c === 0x2f || c === 0x3d) count++
    else if (!isSpace(c)) return 'is not valid base64'
  }
  return count === 0 || count % 4 !== 0 ? 'is not valid base64' : undefined
}

// xhtml: well-formed XHTML whose root is a <div> in the XHTML namespace, or in none (the namespace is
// then declared when written, as HAPI FHIR does). https://hl7.org/fhir/R4/narrative.html#xhtml
const checkXhtml: PrimitiveCheck = (v) => {
  if (typeof v !== 'string') return 'must be a JSON string'
  const problem = narrativeProblem(v)
  if (problem !== undefined) return `must be XHTML with a <div> root element (${problem})`
  return activeContent(v)
}

// txt-1: "The narrative SHALL contain only the basic html formatting elements and attributes ...";
// nothing that runs: no script or embedding element, no event handler attribute, no javascript: URL.
// https://hl7.org/fhir/R4/narrative.html#Narrative
const ACTIVE_ELEMENT = /<\s*(script|object|applet|embed|iframe|frame|frameset|form|input|button|textarea|select|base|link|meta|style)\b/i
const EVENT_ATTRIBUTE = /<[^>]*\s(on[a-z]+)\s*=/i
const SCRIPT_URL = /\s(href|src|action)\s*=\s*["']?\s*(javascript|vbscript):/i

function activeContent(div: string): string | undefined {
  const element = ACTIVE_ELEMENT.exec(div)
  if (element) return `txt-1: the narrative must not contain active content: <${element[1].toLowerCase()}> is not allowed`
  const handler = EVENT_ATTRIBUTE.exec(div)
  if (handler) return `txt-1: the narrative must not contain active content: the ${handler[1].toLowerCase()} attribute is not allowed`
  const url = SCRIPT_URL.exec(div)
  if (url) return `txt-1: the narrative must not contain active content: a ${url[2].toLowerCase()}: URL is not allowed`
  return undefined
}

function byRegex(type: string, message: string): PrimitiveCheck {
  const regex = getTypeDef(type)?.regex
  if (!regex) throw new Error(`No regex for primitive type ${type}`)
  return (v) => (typeof v === 'string' && regex.test(v) ? undefined : typeof v === 'string' ? message : 'must be a JSON string')
}

const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

// The date regexes accept 2021-02-31; reject days past the month's end (leap years checked too).
function withRealDay(check: PrimitiveCheck, message: string): PrimitiveCheck {
  return (v) => {
    const err = check(v)
    if (err || (v as string).length < 10) return err
    const s = v as string
    const month = (s.charCodeAt(5) - 48) * 10 + s.charCodeAt(6) - 48
    const day = (s.charCodeAt(8) - 48) * 10 + s.charCodeAt(9) - 48
    if (day <= 28) return undefined
    if (day > DAYS[month - 1]) return message
    if (month === 2 && day === 29) {
      const year = Number(s.slice(0, 4))
      if (year % 4 !== 0 || (year % 100 === 0 && year % 400 !== 0)) return message
    }
    return undefined
  }
}

function buildChecks(): Map<string, PrimitiveCheck> {
  const dateMsg = 'is not a valid date (YYYY, YYYY-MM or YYYY-MM-DD)'
  const dateTimeMsg = 'is not a valid dateTime (YYYY, YYYY-MM, YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+zz:zz)'
  const instantMsg = 'is not a valid instant (YYYY-MM-DDThh:mm:ss.sss+zz:zz)'
  return new Map<string, PrimitiveCheck>([
    ['boolean', (v) => (typeof v === 'boolean' ? undefined : 'must be a JSON boolean (true or false)')],
    ['integer', integerIn(INT_MIN, 'must be a JSON integer from -2147483648 to 2147483647')],
    ['unsignedInt', integerIn(0, 'must be a JSON integer from 0 to 2147483647')],
    ['positiveInt', integerIn(1, 'must be a JSON integer from 1 to 2147483647')],
    // "decimal: ... represented as a JSON number" (json.html); JSON.parse never yields NaN or Infinity.
    ['decimal', (v) => (decimalValue(v) !== undefined ? undefined : 'must be a JSON number')],
    ['string', checkString],
    ['markdown', checkString],
    ['code', checkCode],
    ['uri', checkUri],
    ['url', checkUri],
    ['canonical', checkUri],
    ['base64Binary', checkBase64],
    ['xhtml', checkXhtml],
    ['id', byRegex('id', 'is not a valid id (1-64 of A-Z, a-z, 0-9, -, .)')],
    ['oid', byRegex('oid', 'is not a valid oid (urn:oid:1.2.3)')],
    ['uuid', byRegex('uuid', 'is not a valid uuid (urn:uuid: and lower-case hex)')],
    ['date', withRealDay(byRegex('date', dateMsg), dateMsg)],
    ['dateTime', withRealDay(byRegex('dateTime', dateTimeMsg), dateTimeMsg)],
    ['instant', withRealDay(byRegex('instant', instantMsg), instantMsg)],
    ['time', byRegex('time', 'is not a valid time (hh:mm:ss)')],
  ])
}

let checks: Map<string, PrimitiveCheck> | undefined

/** The check for a primitive type name (`date`, `code`...); throws for a name that is not one. */
export function primitiveCheck(type: string): PrimitiveCheck {
  checks ??= buildChecks()
  const check = checks.get(type)
  if (!check) throw new Error(`No check for primitive type ${type}`)
  return check
}
