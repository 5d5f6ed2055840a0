// Patient/$everything, instance (`Patient/{id}/$everything`) and type level (all patients, or those
// of `_id`), with HAPI 7's parameters `_count`, `_type`, `_since`, `_lastUpdated` (`_offset` is
// rejected, HAPI-1106). The patient, its compartment and the resources those reference, one level,
// as HAPI's `_include=*`. Served by the export core (shared/export), which the patient API's export
// shares: pages come from a snapshot in the page cache, and the paging links carry a 12-character
// cursor (`_getpages`) any node can serve. https://hl7.org/fhir/R4/patient-operation-everything.html
import { AppError } from '../../errors'
import { type ExportPage, cursorExportPage, exportCache, firstExportPage } from '../../export/everything'
import type { PatientSelector } from '../../export/everything-query'
import { isCursor } from '../../export/cursor'
import { parseSince, parseTypes } from '../../export/export-params'
import { parseCount, selfUrl, unknownSearchId } from '../paging'
import { liveVersion, unknownResource } from '../resource-errors'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import type { OperationInput } from './params'
import type { OperationDef, OperationTarget } from './types'

export const operations: OperationDef[] = [
  { name: '$everything', levels: ['type', 'instance'], methods: ['GET', 'POST'], scope: 'read', types: ['Patient'], handler: everything },
]

async function everything(
  req: FhirRequest,
  ctx: Pick<FhirContext, 'repo' | 'config' | 'jobs' | 'redis' | 'baseUrl'>,
  target: OperationTarget,
  input: OperationInput,
): Promise<FhirResponse> {
  const all = (name: string) => input.values(name).map(String)
  if (all('_offset').length > 0) throw new AppError('invalid', 'HAPI-1106: Everything operation does not support offset searching')
  const countText = all('_count')[0]
  const count = countText === undefined ? ctx.config.defaultPageSize : parseCount(countText, ctx.config.maxPageSize)
  const path = target.id ? `Patient/${target.id}/$everything` : 'Patient/$everything'
  const scope = `fhir ${path}`
  const deps = { sql: ctx.repo.sql, cache: exportCache(ctx.repo.sql, ctx.redis, ctx.config.queuePrefix), jobs: ctx.jobs, inlineMax: ctx.config.exportInlineMax }

  const cursor = all('_getpages')[0]
  let page: ExportPage | undefined
  if (cursor !== undefined) {
    page = isCursor(cursor) ? await cursorExportPage(deps, cursor, undefined, count, scope) : undefined
    if (!page) throw unknownSearchId(cursor)
  } else {
    const ids = all('_id')
      .flatMap((v) => v.split(','))
      .map((v) => v.trim())
      .filter(Boolean)
    const selector: PatientSelector = target.id ? { kind: 'ids', ids: [target.id] } : ids.length > 0 ? { kind: 'ids', ids } : { kind: 'all' }
    const types = parseTypes(all('_type'))
    const since = parseSince(all('_since')[0])
    const lastUpdated = all('_lastUpdated')
    const filter = { types, since, lastUpdated, followReferences: true }
    page = await firstExportPage(deps, { selector, filter, scope, params: '' }, count)
    if (!page && target.id) await patientMissing(ctx, target.id)
  }
  return { status: 200, text: bundleText(req, ctx, path, count, page ?? { total: 0, start: 0, resources: [], params: '' }) }
}

/** 404 for a patient never known, 410 for a deleted one, as a read would answer. */
async function patientMissing(ctx: Pick<FhirContext, 'repo'>, id: string): Promise<never> {
  liveVersion(await ctx.repo.read('Patient', id), 'Patient', id)
  throw unknownResource('Patient', id)
}

/** A searchset Bundle; each resource's stored JSON is spliced in as it is. */
function bundleText(req: FhirRequest, ctx: Pick<FhirContext, 'baseUrl'>, path: string, count: number, page: ExportPage): string {
  const link = (cursor: string) => {
    const q = new URLSearchParams({ _getpages: cursor, _count: String(count) })
    for (const k of ['_format', '_pretty']) if (req.query.has(k)) q.set(k, req.query.get(k) as string)
    return `${ctx.baseUrl}/${path}?${q}`
  }
  const links = [{ relation: 'self', url: selfUrl(req, ctx.baseUrl) }]
  if (page.next) links.push({ relation: 'next', url: link(page.next) })
  if (page.previous) links.push({ relation: 'previous', url: link(page.previous) })
  const head = JSON.stringify({
    resourceType: 'Bundle',
    id: crypto.randomUUID(),
    meta: { lastUpdated: new Date().toISOString() },
    type: 'searchset',
    total: page.total,
    link: links,
  })
  const entries = page.resources.map(
    (r) => `{"fullUrl":${JSON.stringify(`${ctx.baseUrl}/${r.type}/${r.id}`)},"resource":${r.content},"search":{"mode":"match"}}`,
  )
  return `${head.slice(0, -1)},"entry":[${entries.join(',')}]}`
}
