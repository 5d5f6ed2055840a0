// The shape of a search, bounded before it is parsed or planned (issue 19): a search that repeats a
// parameter hundreds of times, or sorts on thirty keys, costs the database tens of seconds. Each bound
// is a setting (shared/limits.ts) and a refusal names it. Chains are bounded where they are parsed
// (HAPI-2007, three links, as HAPI).
import { AppError } from '../../../errors'
import type { Limits } from '../../../limits'

/** Parameters that shape the answer, not the query: not counted. */
const PRESENTATION = new Set(['_format', '_pretty', '_count', '_offset', '_summary', '_elements', '_total', '_getpages', '_getpagesoffset', '_bundletype'])

export function assertSearchShape(query: URLSearchParams, limits: Limits): void {
  // Most searches have a few parameters: within every bound without reading them one by one (iterating a
  // URLSearchParams cost Bun more than a microsecond per search).
  const fewer = (max: number) => max <= 0 || query.size <= max
  if (fewer(limits.maxSearchParameters) && fewer(limits.maxIncludes) && !query.has('_sort') && !query.has('_filter')) return
  let parameters = 0
  let includes = 0
  for (const [key, value] of query) {
    if (PRESENTATION.has(key)) continue
    parameters++
    if (key.startsWith('_include') || key.startsWith('_revinclude')) includes++
    else if (key === '_sort') check('_sort keys', value.split(',').length, limits.maxSortKeys, 'MAX_SORT_KEYS')
    else if (key === '_filter') check('_filter terms', filterTerms(value), limits.maxFilterTerms, 'MAX_FILTER_TERMS')
  }
  check('search parameters', parameters, limits.maxSearchParameters, 'MAX_SEARCH_PARAMETERS')
  check('_include and _revinclude parameters', includes, limits.maxIncludes, 'MAX_INCLUDES')
}

/** Comparisons of a _filter: one, plus one per `and`/`or` joining them. */
function filterTerms(filter: string): number {
  return 1 + (filter.match(/\s(and|or)\s/gi)?.length ?? 0)
}

function check(what: string, n: number, max: number, setting: string): void {
  if (max > 0 && n > max)
    throw new AppError('invalid', `The search has ${n} ${what}, more than this server allows (${max}, the ${setting} setting)`, {
      issues: [
        { severity: 'error', code: 'too-costly', diagnostics: `The search has ${n} ${what}, more than this server allows (${max}, the ${setting} setting)` },
      ],
    })
}
