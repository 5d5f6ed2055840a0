// _summary and _elements: return a subset of each resource, tagged SUBSETTED.
// https://hl7.org/fhir/R4/search.html#summary  https://hl7.org/fhir/R4/search.html#elements
import { invalid } from '../errors'
import { getTypeDef } from './definitions/elements'
import { addSubsettedTag } from './resource-meta'

export type Subset = { summary?: 'true' | 'text' | 'data' | 'count' | 'false'; elements?: Set<string>; exclude?: boolean }

const SUMMARY_VALUES = new Set(['true', 'text', 'data', 'count', 'false'])

/** Reads _summary / _elements from a query; undefined when the whole resource is wanted. */
export function parseSubset(query: URLSearchParams): Subset | undefined {
  const summary = query.get('_summary') ?? undefined
  const elements = query.get('_elements') ?? undefined
  const excluded = query.get('_elements:exclude') ?? undefined
  if (summary === undefined && elements === undefined && excluded === undefined) return undefined
  if (summary !== undefined && (elements !== undefined || excluded !== undefined))
    throw invalid('HAPI-0304: Cannot combine the _summary and _elements parameters')
  if (summary !== undefined) {
    if (!SUMMARY_VALUES.has(summary)) throw invalid(`Invalid _summary value: "${summary}". Valid values are: true, text, data, count, false`)
    return summary === 'false' ? undefined : { summary: summary as Subset['summary'] }
  }
  const list = (elements ?? excluded ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  return { elements: new Set(list), exclude: excluded !== undefined }
}

const ALWAYS = new Set(['resourceType', 'id', 'meta'])

export function applySubset(resource: any, subset: Subset): any {
  const def = getTypeDef(resource.resourceType)
  const out: any = {}
  for (const [key, value] of Object.entries(resource)) {
    if (keep(key, def, subset)) out[key] = value
  }
  return addSubsettedTag(out)
}

function keep(key: string, def: ReturnType<typeof getTypeDef>, subset: Subset): boolean {
  if (ALWAYS.has(key)) return true
  const prop = key.startsWith('_') ? key.slice(1) : key
  const el = def?.properties.get(prop)?.element
  if (subset.elements) {
    const named = subset.elements.has(prop) || (el !== undefined && subset.elements.has(el.name))
    return subset.exclude ? !named : named
  }
  switch (subset.summary) {
    case 'text':
      return prop === 'text' || (el?.min ?? 0) > 0
    case 'data':
      return prop !== 'text'
    default:
      return el?.summary === true || (el?.min ?? 0) > 0
  }
}
