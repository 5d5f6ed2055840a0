// Query string -> SearchQuery: names, modifiers, chains, _has, includes, sort, paging and result
// parameters, validated as HAPI does (unknown parameter: 400, listing the valid ones: HAPI-0524 on the
// REST search path, BaseStorageDao.translateRawParameters; HAPI-1223 elsewhere, as HAPI's DAO).
// Values are checked when compiled, by their type's handler. https://hl7.org/fhir/R4/search.html
import { AppError, invalid } from '../../../errors'
import { isResourceType } from '../../definitions/resource-types'
import { parseCount } from '../../paging'
import { parseSubset } from '../../subset'
import type { Criterion, IncludeSpec, SearchQuery, SortSpec } from './query'
import { type SearchParamDef, searchParamFor, searchParamsFor } from '../registry'
import { splitEscaped } from '../escape'
import { filterCriterion } from './filter'

/** Result and control parameters: not criteria. */
const RESULT_PARAMS = new Set([
  '_count',
  '_sort',
  '_include',
  '_revinclude',
  '_total',
  '_summary',
  '_elements',
  '_format',
  '_pretty',
  '_type',
  '_getpages',
  '_getpagesoffset',
  '_offset',
  '_bundletype',
  '_elements:exclude',
  '_include:iterate',
  '_include:recurse',
  '_revinclude:iterate',
  '_revinclude:recurse',
])

const MAX_CHAIN_DEPTH = 3

export interface ParseOptions {
  defaultCount: number
  maxCount: number
  /** `Prefer: handling=lenient`: unknown parameters are ignored instead of rejected. */
  lenient?: boolean
  /** A search over HTTP (GET /{type}?...): an unknown parameter is HAPI-0524, as HAPI's REST layer says it. */
  rest?: boolean
  /** Resources `_include` and `_revinclude` may add to one page (MAX_INCLUDED_RESOURCES). */
  maxIncluded?: number
}

/** Parses the query of a search over `types` (one type, or several for a system search). */
export function parseSearch(types: string[], query: URLSearchParams, opts: ParseOptions): SearchQuery {
  const criteria: Criterion[] = []
  const include: IncludeSpec[] = []
  const revinclude: IncludeSpec[] = []
  let sort: SortSpec[] = []
  let count = opts.defaultCount
  let total: SearchQuery['total']
  for (const [key, value] of query) {
    if (key === '_count') count = parseCount(value, opts.maxCount)
    else if (key === '_sort') sort = parseSort(types, value)
    else if (key.startsWith('_include') || key.startsWith('_revinclude')) {
      const rev = key.startsWith('_revinclude')
      const mod = key.slice(rev ? 11 : 8)
      if (mod !== '' && mod !== ':iterate' && mod !== ':recurse') throw invalid(`Invalid ${key} parameter`)
      if (value.includes(','))
        throw invalid(`HAPI-0479: 'OR' query parameters (values containing ',') are not supported in ${rev ? '_revinclude' : '_include'} parameters`)
      ;(rev ? revinclude : include).push(parseInclude(value, mod !== '', rev ? '_revinclude' : '_include'))
    } else if (key === '_total') {
      if (value !== 'none' && value !== 'estimate' && value !== 'accurate')
        throw invalid(`Invalid _total value "${value}": expected none, estimate or accurate`)
      total = value
    } else if (key === '_contained' || key === '_containedType') {
      throw new AppError('not-allowed', `HAPI-2476: ${key} is not supported on this server`)
    } else if (RESULT_PARAMS.has(key)) {
      // handled below or by the caller
    } else {
      const c = parseCriterion(types, key, value, 0, opts)
      if (c) criteria.push(c)
    }
  }
  const subset = parseSubset(query)
  const summaryCount = query.get('_summary') === 'count' || count === 0
  const offsetParam = query.get('_offset')
  const offset = offsetParam === null ? undefined : parseOffset(offsetParam)
  return { types, criteria, include, revinclude, sort, count, offset, total, summaryCount, subset, raw: query, maxIncluded: opts.maxIncluded }
}

/** One parameter of `types` (the first type's definition is used; a system search needs it common). */
function parseCriterion(types: string[], key: string, value: string, depth: number, opts: ParseOptions): Criterion | undefined {
  if (key.startsWith('_has:')) return parseHas(types, key, value, depth, opts)
  if (key === '_list') return { kind: 'has', sourceType: 'List', refCode: 'item', inner: idCriterion('List', value) }
  if (key === '_text' || key === '_content') return { kind: 'fulltext', field: key === '_text' ? 'narrative' : 'content', values: splitEscaped(value, ',') }
  if (key === '_filter') return filterCriterion(types, value)
  const dot = key.indexOf('.')
  const head = dot >= 0 ? key.slice(0, dot) : key
  const [name, modifier] = splitModifier(head)
  const def = lookup(types, name, opts)
  if (!def) return undefined
  if (dot >= 0) return parseChain(types, def, modifier, key.slice(dot + 1), value, depth, opts)
  if (modifier === 'missing') {
    if (value !== 'true' && value !== 'false') throw invalid(`Invalid :missing value "${value}": expected true or false`)
    return { kind: 'missing', def, missing: value === 'true' }
  }
  if (def.type === 'reference' && modifier && isResourceType(modifier)) {
    if (def.targets.length > 0 && !def.targets.includes(modifier))
      throw invalid(`Invalid resource type "${modifier}" for parameter ${name}: valid targets are ${def.targets.join(', ')}`)
  }
  return { kind: 'param', def, modifier, values: splitEscaped(value, ',') }
}

function splitModifier(s: string): [string, string | undefined] {
  const colon = s.indexOf(':')
  return colon < 0 ? [s, undefined] : [s.slice(0, colon), s.slice(colon + 1)]
}

function lookup(types: string[], name: string, opts: ParseOptions): SearchParamDef | undefined {
  const defs = types.map((t) => searchParamFor(t, name))
  const def = defs.find((d) => d !== undefined)
  if (def && (types.length === 1 || defs.every((d) => d !== undefined))) return def
  if (opts.lenient) return undefined
  const type = types.length === 1 ? types[0] : types.join(',')
  const valid = [...new Set(types.flatMap((t) => [...searchParamsFor(t).keys()]))].sort()
  throw invalid(
    `${opts.rest ? 'HAPI-0524' : 'HAPI-1223'}: Unknown search parameter "${name}" for resource type "${type}". Valid search parameters for this search are: [${valid.join(', ')}]`,
  )
}

/** `_offset`: HAPI's synchronous offset paging (BaseHapiFhirResourceDao.setOffsetAndCount); a whole number. */
function parseOffset(value: string): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw invalid(`Invalid _offset value: "${value}"`)
  return n
}

function idCriterion(type: string, value: string): Criterion {
  return { kind: 'param', def: searchParamFor(type, '_id') as SearchParamDef, values: splitEscaped(value, ',') }
}

// subject.name=x, subject:Patient.name=x, subject:Patient.organization.name=x (at most 3 links).
function parseChain(
  types: string[],
  def: SearchParamDef,
  modifier: string | undefined,
  rest: string,
  value: string,
  depth: number,
  opts: ParseOptions,
): Criterion {
  if (def.type !== 'reference')
    throw invalid(
      `Invalid search parameter "${def.code}.${rest}". Parameter contains a chain (${rest}) and chains are not supported for this parameter (chaining is only allowed on reference parameters)`,
    )
  if (depth >= MAX_CHAIN_DEPTH)
    throw invalid(`HAPI-2007: The search chain ${def.code}.${rest} is too long. Only chains up to ${MAX_CHAIN_DEPTH} links are supported.`)
  if (modifier && !isResourceType(modifier)) throw invalid(`Invalid chain: "${modifier}" is not a resource type`)
  const candidates = modifier ? [modifier] : def.targets.length > 0 ? def.targets : []
  if (candidates.length === 0) throw invalid(`Unable to chain "${def.code}": its target type is not known; name it as ${def.code}:[type].${rest}`)
  const nextName = splitModifier(rest.split('.')[0])[0]
  const branches: { type: string; inner: Criterion }[] = []
  for (const t of candidates) {
    if (!searchParamFor(t, nextName) && !nextName.startsWith('_has')) continue
    const inner = parseCriterion([t], rest, value, depth + 1, { ...opts, lenient: false })
    if (inner) branches.push({ type: t, inner })
  }
  if (branches.length === 0)
    throw invalid(`HAPI-1223: Unknown search parameter "${nextName}" for resource type "${candidates.join(', ')}" in chain ${def.code}.${rest}`)
  return { kind: 'chain', def, branches }
}

// _has:Observation:patient:code=1234 (nested: _has:Observation:patient:_has:AuditEvent:entity:type=x)
function parseHas(types: string[], key: string, value: string, depth: number, opts: ParseOptions): Criterion {
  const m = /^_has:([A-Za-z]+):([A-Za-z0-9_-]+):(.+)$/.exec(key)
  if (!m) throw invalid(`HAPI-1942: Invalid _has parameter syntax: ${key}. Expected _has:[type]:[reference parameter]:[parameter]`)
  const [, sourceType, refCode, rest] = m
  if (!isResourceType(sourceType)) throw invalid(`HAPI-1942: Invalid _has parameter: unknown resource type "${sourceType}"`)
  const ref = searchParamFor(sourceType, refCode)
  if (!ref || ref.type !== 'reference') throw invalid(`HAPI-1942: Invalid _has parameter: "${refCode}" is not a reference parameter of ${sourceType}`)
  if (depth >= MAX_CHAIN_DEPTH) throw invalid(`HAPI-2007: _has nesting is too deep: ${key}`)
  const inner = parseCriterion([sourceType], rest, value, depth + 1, { ...opts, lenient: false })
  if (!inner) throw invalid(`HAPI-1942: Invalid _has parameter: ${key}`)
  return { kind: 'has', sourceType, refCode, inner }
}

// Observation:subject, Observation:subject:Patient, *, Observation:*
function parseInclude(value: string, iterate: boolean, name: string): IncludeSpec {
  if (value === '*') return { sourceType: '*', code: '*', iterate }
  const [sourceType, code, targetType, extra] = value.split(':')
  if (!sourceType || !code || extra !== undefined || !isResourceType(sourceType)) throw invalid(`HAPI-0431: Invalid ${name} parameter value: "${value}"`)
  if (code !== '*') {
    const def = searchParamFor(sourceType, code)
    if (!def || def.type !== 'reference')
      throw invalid(`HAPI-0431: Invalid ${name} parameter value: "${value}": ${code} is not a reference parameter of ${sourceType}`)
  }
  if (targetType !== undefined && !isResourceType(targetType)) throw invalid(`HAPI-0431: Invalid ${name} parameter value: "${value}"`)
  return { sourceType, code, targetType, iterate }
}

function parseSort(types: string[], value: string): SortSpec[] {
  return value
    .split(',')
    .filter(Boolean)
    .map((part) => {
      const desc = part.startsWith('-')
      const code = desc ? part.slice(1) : part
      if (code === '_id' || code === '_lastUpdated') return { code, desc }
      const def = types.map((t) => searchParamFor(t, code)).find(Boolean)
      if (!def || def.common === 'control' || def.common === 'fulltext' || def.type === 'composite' || def.type === 'special')
        throw invalid(`HAPI-1437: Unknown _sort parameter value "${code}" for resource type "${types.join(',')}"`)
      return { code, def, desc }
    })
}
