// What the search tests compute their expected answers with, and how they read search responses.
import { readJson, type TestServer } from './harness'

/** The server's string normalisation: accents removed, upper case. */
export const norm = (v: string) =>
  v
    .normalize('NFD')
    .replace(/\p{Mn}/gu, '')
    .toUpperCase()

/** `Type/id` of resources, sorted. */
export const keys = (resources: any[]) => resources.map((r) => `${r.resourceType}/${r.id}`).sort()

export const hasCoding = (cc: any, system: string | undefined, code: string) =>
  (cc?.coding ?? []).some((c: any) => c.code === code && (system === undefined || c.system === system))

/** GET under /fhir that must answer 200; the JSON body. */
export async function getOk(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<any> {
  const res = await s.fhirFetch(path, { headers })
  if (res.status !== 200) throw new Error(`GET /fhir${path}: ${res.status} ${await res.text()}`)
  return readJson(res)
}

/** `Type/id` of the matches, sorted: one page of up to 200 (more is an error of the test). */
export async function matchKeysOf(s: TestServer, path: string): Promise<string[]> {
  const b = await getOk(s, `${path}${path.includes('?') ? '&' : '?'}_count=200`)
  if (b.link?.some((l: any) => l.relation === 'next')) throw new Error(`${path}: more than one page`)
  return keys((b.entry ?? []).filter((e: any) => e.search?.mode === 'match').map((e: any) => e.resource))
}

/** `Type/id` of the matches in the order served, following `next` links to the end. */
export async function pagedMatchKeys(s: TestServer, path: string): Promise<string[]> {
  const out: string[] = []
  for (let next: string | undefined = path; next; ) {
    const b = await getOk(s, next)
    out.push(...(b.entry ?? []).filter((e: any) => e.search?.mode === 'match').map((e: any) => `${e.resource.resourceType}/${e.resource.id}`))
    next = linkPath(b, 'next')
  }
  return out
}

/** PUT of a resource at its id that must answer 200 or 201; the JSON body. */
export async function putOk(s: TestServer, resource: any): Promise<any> {
  const res = await s.fhirFetch(`/${resource.resourceType}/${resource.id}`, { method: 'PUT', json: resource })
  if (res.status !== 200 && res.status !== 201) throw new Error(`PUT ${resource.resourceType}/${resource.id}: ${res.status} ${await res.text()}`)
  return readJson(res)
}

/** A link of the bundle as a path under /fhir. */
export function linkPath(bundle: any, relation: string): string | undefined {
  const url = bundle.link?.find((l: any) => l.relation === relation)?.url
  if (!url) return undefined
  const u = new URL(url)
  return u.pathname.replace(/^\/fhir/, '') + u.search
}

/** [lo, hi] in ms of a FHIR date, dateTime or instant from its precision (no zone: UTC, as the server reads it). */
function dateRange(v: string): [number, number] {
  const m = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/.exec(v)
  if (!m) throw new Error(`not a date: ${v}`)
  const [, y, mo, d, h, mi, sec, frac, zone] = m
  if (!mo) return [Date.UTC(+y, 0, 1), Date.UTC(+y + 1, 0, 1) - 1]
  if (!d) return [Date.UTC(+y, +mo - 1, 1), Date.UTC(+y, +mo, 1) - 1]
  if (!h) return [Date.UTC(+y, +mo - 1, +d), Date.UTC(+y, +mo - 1, +d + 1) - 1]
  const lo = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${sec ?? '00'}${frac ?? ''}${zone ?? 'Z'}`)
  const width = sec === undefined ? 60_000 : !frac ? 1000 : 10 ** Math.max(0, 4 - frac.length)
  return [lo, lo + width - 1]
}

/**
 * FHIR's prefix semantics on ranges: https://hl7.org/fhir/R4/search.html#prefix. A search value without
 * a time compares with the calendar date as written in the resource, its zone not considered (R4, HAPI).
 */
export function dateMatches(value: string, param: string): boolean {
  const prefix = /^[a-z]{2}/.test(param) ? param.slice(0, 2) : 'eq'
  const searched = prefix === param.slice(0, 2) ? param.slice(2) : param
  const [plo, phi] = dateRange(searched)
  const [lo, hi] = dateRange(searched.length <= 10 ? value.slice(0, 10) : value)
  const eq = plo <= lo && hi <= phi
  switch (prefix) {
    case 'eq':
      return eq
    case 'ne':
      return !eq
    case 'gt':
      return hi > phi
    case 'lt':
      return lo < plo
    case 'ge':
      return hi > phi || eq
    case 'le':
      return lo < plo || eq
    case 'sa':
      return lo > phi
    case 'eb':
      return hi < plo
  }
  throw new Error(`prefix ${prefix}`)
}

/** The implicit range of a number as written: `100` is [99.5, 100.5). https://hl7.org/fhir/R4/search.html#number */
function precisionRange(text: string): [number, number] {
  const decimals = text.includes('.') ? text.split('.')[1].length : 0
  const half = 0.5 * 10 ** -decimals
  return [Number(text) - half, Number(text) + half]
}

/**
 * The first threshold from the median of `values` up (by `step`, with `decimals` decimals) that no value
 * falls within the precision range of: there `gt`/`lt` read as plain comparisons and as range
 * comparisons agree, and some values lie on each side.
 */
export function clearThreshold(values: number[], step = 1, decimals = 0): string {
  const sorted = [...values].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)]
  for (let t = Math.round(median / step) * step; ; t += step) {
    const text = t.toFixed(decimals)
    const [lo, hi] = precisionRange(text)
    if (!values.some((v) => v >= lo && v < hi)) return text
  }
}

/** `eq`: the value's own precision range lies within the search value's. */
export function numberEq(value: number, search: string): boolean {
  const [slo, shi] = precisionRange(search)
  const [lo, hi] = precisionRange(String(value))
  return lo >= slo && hi <= shi
}
