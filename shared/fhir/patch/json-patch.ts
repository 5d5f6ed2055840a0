// JSON Patch (RFC 6902) over JSON Pointers (RFC 6901), the `application/json-patch+json` body of
// PATCH /fhir/{type}/{id}. https://hl7.org/fhir/R4/http.html#patch
// https://www.rfc-editor.org/rfc/rfc6902
import { invalid } from '../../errors'
import { cloneJson } from '../format/json'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Op = { op: string; path: string; from?: string; value?: Json }

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test'])

/** Applies `ops` to a copy of `doc`; the input is never mutated. Any bad operation or failed `test` throws. */
export function applyJsonPatch(doc: any, ops: unknown): any {
  if (!Array.isArray(ops)) throw invalid('JSON Patch body must be an array of operations')
  let out: Json = cloneJson(doc)
  ops.forEach((raw, i) => {
    const op = checkOp(raw, i)
    out = applyOp(out, op, i)
  })
  return out
}

function checkOp(raw: unknown, i: number): Op {
  const op = raw as Op
  if (!op || typeof op !== 'object' || Array.isArray(op)) throw invalid(`operation ${i}: not an object`)
  if (typeof op.op !== 'string' || !OPS.has(op.op)) throw invalid(`operation ${i}: unknown op ${JSON.stringify(op.op)}`)
  if (typeof op.path !== 'string') throw invalid(`operation ${i}: missing path`)
  // "value" must be present for add, replace and test, though it may be null. RFC 6902 §4.1, §4.3, §4.6
  if ((op.op === 'add' || op.op === 'replace' || op.op === 'test') && !('value' in op)) throw invalid(`operation ${i}: missing value`)
  if ((op.op === 'move' || op.op === 'copy') && typeof op.from !== 'string') throw invalid(`operation ${i}: missing from`)
  return op
}

function applyOp(doc: Json, op: Op, i: number): Json {
  const where = `operation ${i} (${op.op} ${op.path})`
  switch (op.op) {
    case 'add':
      return add(doc, parsePointer(op.path, where), cloneJson(op.value as Json), where)
    case 'remove':
      return remove(doc, parsePointer(op.path, where), where).doc
    case 'replace': {
      const tokens = parsePointer(op.path, where)
      resolve(doc, tokens, where) // the target must exist. RFC 6902 §4.3
      if (tokens.length === 0) return cloneJson(op.value as Json)
      return add(remove(doc, tokens, where).doc, tokens, cloneJson(op.value as Json), where)
    }
    case 'move': {
      const from = parsePointer(op.from!, where)
      const to = parsePointer(op.path, where)
      // "The 'from' location MUST NOT be a proper prefix of the 'path' location." RFC 6902 §4.4
      if (from.length < to.length && from.every((t, k) => t === to[k])) throw invalid(`${where}: cannot move a value into itself`)
      const removed = remove(doc, from, where)
      return add(removed.doc, to, removed.value, where)
    }
    case 'copy':
      return add(doc, parsePointer(op.path, where), cloneJson(resolve(doc, parsePointer(op.from!, where), where)), where)
    case 'test':
      if (!deepEqual(resolve(doc, parsePointer(op.path, where), where), op.value as Json)) throw invalid(`${where}: test failed`)
      return doc
  }
  throw invalid(`${where}: unknown op`)
}

/** RFC 6901 §3-4: "" is the whole document; otherwise "/"-separated tokens with ~1 -> "/" then ~0 -> "~". */
function parsePointer(pointer: string, where: string): string[] {
  if (pointer === '') return []
  if (!pointer.startsWith('/')) throw invalid(`${where}: JSON Pointer must start with "/"`)
  return pointer
    .slice(1)
    .split('/')
    .map((t) => {
      if (/~[^01]|~$/.test(t)) throw invalid(`${where}: bad escape in JSON Pointer`)
      return t.replace(/~1/g, '/').replace(/~0/g, '~')
    })
}

function arrayIndex(token: string, length: number, allowEnd: boolean, where: string): number {
  if (allowEnd && token === '-') return length
  // Array indices are decimal without leading zeros. RFC 6901 §4
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw invalid(`${where}: "${token}" is not an array index`)
  const index = Number(token)
  if (index > length || (!allowEnd && index === length)) throw invalid(`${where}: array index ${index} out of bounds`)
  return index
}

function isObject(v: Json): v is { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function resolve(doc: Json, tokens: string[], where: string): Json {
  let node = doc
  for (const t of tokens) {
    if (Array.isArray(node)) node = node[arrayIndex(t, node.length, false, where)]
    else if (isObject(node) && Object.hasOwn(node, t)) node = node[t]
    else throw invalid(`${where}: path does not exist`)
  }
  return node
}

function add(doc: Json, tokens: string[], value: Json, where: string): Json {
  if (tokens.length === 0) return value // replaces the whole document. RFC 6902 §4.1
  // The parent must already exist: missing objects are not created recursively. RFC 6902 §4.1
  const parent = resolve(doc, tokens.slice(0, -1), where)
  const last = tokens[tokens.length - 1]
  if (Array.isArray(parent)) parent.splice(arrayIndex(last, parent.length, true, where), 0, value)
  else if (isObject(parent)) parent[last] = value
  else throw invalid(`${where}: parent is not a container`)
  return doc
}

function remove(doc: Json, tokens: string[], where: string): { doc: Json; value: Json } {
  if (tokens.length === 0) throw invalid(`${where}: cannot remove the whole document`)
  const parent = resolve(doc, tokens.slice(0, -1), where)
  const last = tokens[tokens.length - 1]
  if (Array.isArray(parent)) {
    const [value] = parent.splice(arrayIndex(last, parent.length, false, where), 1)
    return { doc, value }
  }
  if (isObject(parent) && Object.hasOwn(parent, last)) {
    const value = parent[last]
    delete parent[last]
    return { doc, value }
  }
  throw invalid(`${where}: path does not exist`)
}

/** Equality for `test`: same JSON type and value, objects regardless of key order. RFC 6902 §4.6 */
function deepEqual(a: Json, b: Json): boolean {
  if (a === b) return true
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, k) => deepEqual(x, b[k]))
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a)
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]))
  }
  return false
}
