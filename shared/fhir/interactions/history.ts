// history at instance, type and system level, paged through `_getpages` links.
// https://hl7.org/fhir/R4/http.html#history
import { AppError } from '../../errors'
import type { HistoryQuery } from '../repo/history'
import type { StoredVersion } from '../repo/types'
import { type PageToken, pageLink, pageSize, selfUrl } from '../paging'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'

/** What a history uses of the context. */
type HistoryDeps = Pick<FhirContext, 'repo' | 'config' | 'baseUrl' | 'secret'>
import { unknownResource } from '../resource-errors'
import { etagOf } from './write-response'
import { parseFhirJson } from '../format/json'

export async function history(req: FhirRequest, ctx: HistoryDeps, type?: string, id?: string): Promise<FhirResponse> {
  const q = req.query
  for (const key of q.keys())
    if (!['_since', '_at', '_count', '_format', '_pretty', '_summary', '_elements'].includes(key))
      throw new AppError('invalid', `Unknown parameter for history operation: ${key}`)
  if (q.has('_since') && q.has('_at')) throw new AppError('invalid', 'HAPI-0460: Unable to combine _at and _since parameters for history operation')
  if (id !== undefined) {
    if (!(await ctx.repo.read(type as string, id))) throw unknownResource(type as string, id)
  }
  const hq: HistoryQuery = { type, id, asOf: new Date() }
  const since = q.get('_since')
  if (since) hq.since = parseInstant('_since', since)
  const at = q.get('_at')
  if (at) Object.assign(hq, parseAt(at))
  const token: PageToken = { kind: 'history', q: { type, id, since: hq.since, atStart: hq.atStart, atEnd: hq.atEnd, asOf: hq.asOf } }
  return historyBundle(req, ctx, token, 0)
}

/** Serves a page of a history, first or later (`_getpages`). */
export async function historyBundle(req: FhirRequest, ctx: HistoryDeps, token: PageToken, offset: number): Promise<FhirResponse> {
  const t = token.q as Record<string, string | undefined>
  const hq: HistoryQuery = {
    type: t.type,
    id: t.id,
    since: t.since ? new Date(t.since) : undefined,
    atStart: t.atStart ? new Date(t.atStart) : undefined,
    atEnd: t.atEnd ? new Date(t.atEnd) : undefined,
    asOf: new Date(t.asOf as string),
  }
  const count = pageSize(req.query, ctx.config.defaultPageSize, ctx.config.maxPageSize)
  const summaryCount = count === 0 || req.query.get('_summary') === 'count'
  const rows = summaryCount ? [] : await ctx.repo.history(hq, offset, count + 1)
  const hasNext = rows.length > count
  const page = rows.slice(0, count)
  const bundle: any = { resourceType: 'Bundle', id: crypto.randomUUID(), meta: { lastUpdated: new Date().toISOString() }, type: 'history' }
  // The total is cheap for one instance and for a count-only request; elsewhere it is left out, as HAPI does by default.
  if (hq.id !== undefined || summaryCount) bundle.total = await ctx.repo.historyCount(hq)
  const extra = new URLSearchParams()
  for (const k of ['_format', '_pretty']) if (req.query.has(k)) extra.set(k, req.query.get(k) as string)
  bundle.link = [{ relation: 'self', url: selfUrl(req, ctx.baseUrl) }]
  if (hasNext) bundle.link.push({ relation: 'next', url: pageLink(ctx.baseUrl, ctx.secret, token, offset + count, count, 'history', extra) })
  if (offset > 0)
    bundle.link.push({ relation: 'previous', url: pageLink(ctx.baseUrl, ctx.secret, token, Math.max(0, offset - count), count, 'history', extra) })
  if (!summaryCount) bundle.entry = page.map((v) => historyEntry(ctx, v))
  return { status: 200, resource: bundle }
}

function historyEntry(ctx: Pick<FhirContext, 'baseUrl'>, v: StoredVersion): any {
  const entry: any = { fullUrl: `${ctx.baseUrl}/${v.type}/${v.id}` }
  if (!v.deleted) entry.resource = parseFhirJson(v.content as string)
  const method = v.deleted ? 'DELETE' : v.version === 1 ? 'POST' : 'PUT'
  // HAPI (R4BundleFactory): the version's own unqualified id, `Type/id/_history/n`, whatever the method.
  entry.request = { method, url: `${v.type}/${v.id}/_history/${v.version}` }
  entry.response = {
    status: v.version === 1 && !v.deleted ? '201 Created' : '200 OK',
    etag: etagOf(v.version),
    lastModified: v.lastUpdated.toISOString(),
  }
  return entry
}

const INSTANT = /^\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/

function parseInstant(name: string, value: string): Date {
  const d = INSTANT.test(value) ? new Date(value) : new Date(Number.NaN)
  if (Number.isNaN(d.getTime())) throw new AppError('invalid', `Invalid date/time value for ${name}: "${value}"`)
  return d
}

/** `_at=[prefix]date`: the range the date covers at its precision, opened on one side by ge/gt/le/lt. */
function parseAt(value: string): Pick<HistoryQuery, 'atStart' | 'atEnd'> {
  const m = /^(eq|ge|gt|le|lt)?(.+)$/.exec(value) as RegExpExecArray
  const prefix = m[1] ?? 'eq'
  const raw = m[2]
  const start = parseInstant('_at', raw)
  const end = new Date(start)
  if (/^\d{4}$/.test(raw)) end.setUTCFullYear(end.getUTCFullYear() + 1)
  else if (/^\d{4}-\d{2}$/.test(raw)) end.setUTCMonth(end.getUTCMonth() + 1)
  else if (/^\d{4}-\d{2}-\d{2}$/.test(raw)) end.setUTCDate(end.getUTCDate() + 1)
  else end.setTime(end.getTime() + 1000)
  if (prefix === 'ge' || prefix === 'gt') return { atStart: prefix === 'ge' ? start : end }
  if (prefix === 'le' || prefix === 'lt') return { atStart: new Date(0), atEnd: prefix === 'le' ? end : start }
  return { atStart: start, atEnd: end }
}
