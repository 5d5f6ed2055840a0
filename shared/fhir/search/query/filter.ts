// The _filter parameter: a recursive-descent parser of the filter language, the criterion it becomes, and
// the SQL of one comparison. As HAPI: comparisons on the searched type's own parameters, `and`, `or`,
// parentheses, no parameter paths (`a.b`, `a[...]`). Beyond HAPI: `not(...)`, and `and` binds tighter
// than `or` (HAPI reads `a and b or c` as `a and (b or c)`). https://hl7.org/fhir/R4/search_filter.html
import type { Sql } from '../../../db/client'
import { type AppError, invalid } from '../../../errors'
import type { Criterion, FilterOp } from './query'
import { type SearchParamDef, searchParamFor, searchParamsFor } from '../registry'
import { type Fragment, type ParamHandler, PREFIX_OPS, type PredicateContext, paramType } from '../types'

/** A filter as written, before its parameter names are resolved. */
export type FilterExpr =
  | { kind: 'compare'; param: string; op: FilterOp; value: string }
  | { kind: 'and'; all: FilterExpr[] }
  | { kind: 'or'; any: FilterExpr[] }
  | { kind: 'not'; inner: FilterExpr }

const OPS: Record<FilterOp, true> = { eq: true, ne: true, co: true, sw: true, ew: true, gt: true, lt: true, ge: true, le: true, sa: true, eb: true, ap: true }
// In the specification's operator table but not supported here (nor by HAPI's query builder).
const UNSUPPORTED_OPS = new Set(['pr', 'po', 'ss', 'sb', 'in', 'ni', 're'])

// The operators each type takes, and what a comparison means on its rows, are the type's own
// (types/<type>.ts filterOps and compare).

const MAX_DEPTH = 32
const NAME_START = /[A-Za-z_]/
// HAPI's name characters: the specification's, and ':'
const NAME_CHAR = /[A-Za-z0-9_:-]/
// What HAPI's lexer knows how to start a token with; anything else is an "Unknown Character".
const KNOWN_START = /[A-Za-z0-9_".()[\]]/
const WHITESPACE = /\s/
// A JSON string's escapes. https://hl7.org/fhir/R4/search_filter.html#string
const ESCAPES = new Map([
  ['"', '"'],
  ['\\', '\\'],
  ['/', '/'],
  ['b', '\b'],
  ['f', '\f'],
  ['n', '\n'],
  ['r', '\r'],
  ['t', '\t'],
])

/**
 * The criterion of one `_filter` value; undefined for a blank one (ignored, as HAPI ignores empty
 * parameters). The value of a comparison, once unquoted, is read as any search value is (`\|`, `\,`).
 */
export function filterCriterion(types: string[], text: string): Criterion | undefined {
  if (text.trim() === '') return undefined
  return resolve(types, parseFilter(text))
}

/** Parses a filter; syntax errors are 400 `HAPI-1221: Error parsing _filter syntax: ...` with HAPI's inner message. */
export function parseFilter(text: string): FilterExpr {
  return new FilterParser(text).parse()
}

function syntax(message: string, code?: string): AppError {
  return invalid(`HAPI-1221: Error parsing _filter syntax: ${code ? `HAPI-${code}: ` : ''}${message}`)
}

// filter  = or
// or      = and *("or" and)
// and     = operand *("and" operand)
// operand = "(" filter ")" / "not" "(" filter ")" / name op value
// value   = JSON string / token (up to whitespace, ")" or "]")
class FilterParser {
  private pos = 0
  private depth = 0

  constructor(private readonly text: string) {}

  parse(): FilterExpr {
    const expr = this.or()
    if (this.peek() !== undefined) throw syntax(`Expression did not terminate at ${this.pos}`, '1056')
    return expr
  }

  private or(): FilterExpr {
    const any = [this.and()]
    while (this.keyword('or')) any.push(this.and())
    return any.length === 1 ? (any[0] as FilterExpr) : { kind: 'or', any }
  }

  private and(): FilterExpr {
    const all = [this.operand()]
    while (this.keyword('and')) all.push(this.operand())
    return all.length === 1 ? (all[0] as FilterExpr) : { kind: 'and', all }
  }

  private operand(): FilterExpr {
    const c = this.peek()
    let expr: FilterExpr
    if (c === '(') expr = this.group()
    else if (c !== undefined && NAME_START.test(c)) {
      const name = this.name()
      if (name === 'not') {
        if (this.peek() !== '(') throw syntax(`Expected '(' after not at ${this.pos} but found ${this.found()}`)
        expr = { kind: 'not', inner: this.group() }
      } else expr = this.comparison(name)
    } else throw this.unexpected(c, '1058')
    // an operand is followed by and, or, ")" or the end
    const next = this.peek()
    if (next !== undefined && next !== ')') {
      if (!NAME_START.test(next)) throw this.unexpected(next, '1068')
      const end = this.nameEnd()
      const word = this.text.slice(this.pos, end)
      if (word !== 'and' && word !== 'or') throw syntax(`Unexpected Name ${word} at ${end}`, '1059')
    }
    return expr
  }

  private group(): FilterExpr {
    if (++this.depth > MAX_DEPTH) throw syntax(`Parentheses nested deeper than ${MAX_DEPTH} at ${this.pos}`)
    this.pos++ // (
    const inner = this.or()
    if (this.peek() !== ')') throw syntax(`Expected ')' at ${this.pos} but found ${this.found()}`, '1057')
    this.pos++
    this.depth--
    return inner
  }

  private comparison(param: string): FilterExpr {
    const c = this.peek()
    if (c === '.' || c === '[')
      throw invalid(`_filter parameter paths are not supported ("${param}${c}" at ${this.pos}): filter on the parameters of the searched type`)
    if (c === undefined || !NAME_START.test(c)) throw this.unexpected(c, '1063')
    const op = this.name()
    if (UNSUPPORTED_OPS.has(op)) throw invalid(`_filter operator "${op}" is not supported; supported operators are ${Object.keys(OPS).join(', ')}`)
    if (!Object.hasOwn(OPS, op)) throw syntax(`Unknown operation ${op} at ${this.pos}`, '1064')
    const v = this.peek()
    if (v === undefined || v === ')' || v === ']') throw this.unexpected(v, '1065')
    const value = v === '"' ? this.string() : this.token()
    return { kind: 'compare', param, op: op as FilterOp, value }
  }

  private string(): string {
    let out = ''
    let i = this.pos + 1
    for (;;) {
      const c = this.text[i]
      if (c === undefined) throw syntax(`Problem with string termination at ${i}`, '1054')
      if (c === '"') break
      if (c !== '\\') {
        out += c
        i++
        continue
      }
      const e = this.text[++i] ?? ''
      const hex = this.text.slice(i + 1, i + 5)
      if (e === 'u' && /^[0-9A-Fa-f]{4}$/.test(hex)) {
        out += String.fromCharCode(Number.parseInt(hex, 16))
        i += 5
      } else if (ESCAPES.has(e)) {
        out += ESCAPES.get(e)
        i++
      } else throw syntax(`Unknown escape sequence at ${i}`, '1053')
    }
    if (out === '') throw syntax(`Problem with string at ${i} cannot be empty`, '1055')
    this.pos = i + 1
    return out
  }

  private token(): string {
    const start = this.pos
    while (this.pos < this.text.length && !/[\s)\]]/.test(this.text[this.pos] as string)) this.pos++
    return this.text.slice(start, this.pos)
  }

  /** Consumes `word` when it is the next name. */
  private keyword(word: string): boolean {
    const c = this.peek()
    if (c === undefined || !NAME_START.test(c)) return false
    const end = this.nameEnd()
    if (this.text.slice(this.pos, end) !== word) return false
    this.pos = end
    return true
  }

  private name(): string {
    const end = this.nameEnd()
    const name = this.text.slice(this.pos, end)
    this.pos = end
    return name
  }

  private nameEnd(): number {
    let i = this.pos + 1
    while (i < this.text.length && NAME_CHAR.test(this.text[i] as string)) i++
    return i
  }

  /** The next character after whitespace (skipped), or undefined at the end. */
  private peek(): string | undefined {
    while (this.pos < this.text.length && WHITESPACE.test(this.text[this.pos] as string)) this.pos++
    return this.text[this.pos]
  }

  private found(): string {
    return this.text[this.pos] ?? '[end!]'
  }

  private unexpected(c: string | undefined, code: string): AppError {
    if (c === undefined) return syntax(`Unexpected end of expression at ${this.pos}`)
    if (!KNOWN_START.test(c)) return syntax(`Unknown Character "${c}" at ${this.pos}`, '1052')
    return syntax(`Unexpected Character ${c} at ${this.pos}`, code)
  }
}

function resolve(types: string[], e: FilterExpr): Criterion {
  switch (e.kind) {
    case 'and':
      return { kind: 'and', all: e.all.map((x) => resolve(types, x)) }
    case 'or':
      return { kind: 'or', any: e.any.map((x) => resolve(types, x)) }
    case 'not':
      return { kind: 'not', inner: resolve(types, e.inner) }
    case 'compare':
      return comparisonCriterion(filterParam(types, e.param), e.op, e.value)
  }
}

// Unknown names are 400 as in HAPI's filter (HAPI-1206; the main parser's is HAPI-1223), even with
// handling=lenient: a filter is not a list of independent parameters that could be dropped one by one.
function filterParam(types: string[], name: string): SearchParamDef {
  const defs = types.map((t) => searchParamFor(t, name))
  if (defs.length > 0 && defs.every((d) => d !== undefined)) return defs[0] as SearchParamDef
  const valid = [...new Set(types.flatMap((t) => [...searchParamsFor(t).keys()]))].sort()
  throw invalid(
    `HAPI-1206: Unknown search parameter "${name}" for resource type "${types.join(',')}". Valid search parameters for this search are: [${valid.join(', ')}]`,
  )
}

function comparisonCriterion(def: SearchParamDef, op: FilterOp, value: string): Criterion {
  // _id and _lastUpdated are columns of the resource row: their ordinary criteria, with :not or a prefix
  if (def.code === '_id') {
    if (op !== 'eq' && op !== 'ne') throw wrongOperator(def, op, ['eq', 'ne'])
    return op === 'ne' ? { kind: 'param', def, modifier: 'not', values: [value] } : { kind: 'param', def, values: [value] }
  }
  if (def.code === '_lastUpdated') {
    if (!PREFIX_OPS.includes(op)) throw wrongOperator(def, op, PREFIX_OPS)
    return { kind: 'param', def, values: [`${op}${value}`] }
  }
  if (def.type === 'composite') throw invalid('HAPI-1207: Composite search parameters not currently supported with _filter clauses')
  const ops = def.common === 'fulltext' || def.common === 'control' ? undefined : paramType(def.type)?.filterOps
  if (!ops) throw invalid(`Parameter ${def.code} can not be used in _filter`)
  if (!ops.includes(op)) {
    if (def.type === 'reference')
      throw invalid('HAPI-1212: Invalid operator specified for reference predicate.  Supported operators for reference predicate are "eq" and "ne".')
    throw wrongOperator(def, op, ops)
  }
  return { kind: 'compare', def, op, value }
}

function wrongOperator(def: SearchParamDef, op: FilterOp, ops: readonly FilterOp[]): AppError {
  return invalid(`Operator "${op}" can not be used in _filter on parameter ${def.code} of type ${def.type}: use one of ${ops.join(', ')}`)
}

/**
 * One comparison as a predicate over the index rows `i` of its parameter's type; compile.ts wraps it in
 * EXISTS. `ne` is HAPI's: some value of the parameter differs (so a resource without one never
 * matches); `not(x eq v)` is the other reading, no value equals.
 */
export function comparisonPredicate(sql: Sql, h: ParamHandler, op: FilterOp, value: string, ctx: PredicateContext): Fragment {
  const compare = paramType(ctx.def.type)?.compare
  // date, number, quantity: `birthdate ge 2020` is `birthdate=ge2020`
  return compare ? compare(sql, op, value, ctx, h) : h.predicate(sql, `${op}${value}`, ctx)
}
