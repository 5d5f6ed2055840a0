// The patient API's export (`GET /patients/{id}/$everything`): the latest stored FHIR resources of an
// organization's patient as a paged searchset Bundle. The records of a patient are the Patient
// compartments of the FHIR Patients carrying the organization's patient-id identifier
// (shared/patients/identifier.ts), with `search.mode` `match`, and, as FHIR Patient/$everything does,
// the resources they reference (a Practitioner, an Organization), with `search.mode` `include`, so
// no reference dangles. Every fullUrl is under `{base}/patients/{id}/fhir`, which the organization's
// key can read (patient-record.ts). The patient API route resolves the organization and the patient,
// then calls this; pages come from the same export core and page cache as Patient/$everything.
// Spec: patient-connection-api.md, "Export query parameters" (`_since`: "changed after", exclusive).
import type { Config } from '../config'
import type { Repo } from '../fhir/repo/repo'
import type { Jobs } from '../jobs/queues'
import { badRequest, invalidData } from '../patients/api-error'
import { patientIdSystem } from '../patients/identifier'
import type { Redis } from '../redis'
import { isCursor } from './cursor'
import { type ExportPage, cursorExportPage, exportCache, firstExportPage } from './everything'
import { filterParams, parseSince, parseTypes } from './export-params'

export interface PatientExportDeps {
  repo: Repo
  /** Page caches live here; absent in the embedded form (they are then kept in PostgreSQL). */
  redis?: Redis
  /** Where large exports get their page cache built; absent: built in the request. */
  jobs?: Jobs
  /** Key prefix of the cache and the inline limit; defaults when absent. */
  config?: Pick<Config, 'queuePrefix' | 'exportInlineMax'>
}

export interface PatientExportRequest {
  organizationId: string
  /** The organization's own patient id. */
  patientId: string
  /** The query string as received (_type, _since, _count, starting_after, ending_before). */
  query: URLSearchParams
  /** Absolute URL of the export endpoint, for the Bundle's links. */
  selfUrl: string
}

const DEFAULT_COUNT = 100
const MAX_COUNT = 100

/** The export Bundle page. Bad parameters throw AppError('invalid') with `details.param` naming it (400 invalid_data). */
export async function exportPatientPage(deps: PatientExportDeps, req: PatientExportRequest): Promise<unknown> {
  const q = req.query
  const count = parseExportCount(q.get('_count'))
  const types = parseTypes(q.getAll('_type'))
  const since = parseSince(q.get('_since') ?? undefined)
  const params = filterParams({ _type: types?.join(','), _since: q.get('_since') ?? undefined })
  const scope = `patient-api ${req.organizationId} ${req.patientId}`
  const core = {
    sql: deps.repo.sql,
    cache: exportCache(deps.repo.sql, deps.redis, deps.config?.queuePrefix ?? 'fhir'),
    jobs: deps.jobs,
    inlineMax: deps.config?.exportInlineMax ?? 5000,
  }
  const after = q.get('starting_after')
  const before = q.get('ending_before')
  if (after !== null && before !== null) {
    throw badRequest('starting_after and ending_before cannot be used together', 'ending_before')
  }
  let page: ExportPage | undefined
  if (after !== null || before !== null) {
    const param = after !== null ? 'starting_after' : 'ending_before'
    const cursor = (after ?? before) as string
    page = isCursor(cursor) ? await cursorExportPage(core, cursor, after !== null ? 'after' : 'before', count, scope) : undefined
    if (!page) throw invalidData(param, `Invalid or expired cursor '${cursor}': pass the cursor of a link of this export (valid 7 days)`)
    // "Keep filters stable across every page of the same read": a cursor belongs to its filters.
    const given = new URLSearchParams(params)
    const issued = new URLSearchParams(page.params)
    for (const name of ['_type', '_since']) {
      if (q.has(name) && given.get(name) !== issued.get(name)) {
        throw invalidData(name, `${name} differs from the export this cursor belongs to: keep the filters of the first page`)
      }
    }
  } else {
    const selector = { kind: 'identifier' as const, system: patientIdSystem(req.organizationId), value: req.patientId }
    page = await firstExportPage(core, { selector, filter: { types, after: since, followReferences: true, markIncluded: true }, scope, params }, count)
  }
  return exportBundle(req, count, page ?? { total: 0, start: 0, resources: [], params })
}

function parseExportCount(raw: string | null): number {
  if (raw === null) return DEFAULT_COUNT
  const n = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : Number.NaN
  if (!(n >= 1 && n <= MAX_COUNT)) throw invalidData('_count', `_count must be an integer from 1 to ${MAX_COUNT}, got '${raw}'`)
  return n
}

/** The Export Bundle of the spec: searchset, total, self/next/previous links, entries with search.mode. */
function exportBundle(req: PatientExportRequest, count: number, page: ExportPage): unknown {
  const link = (name: string, cursor: string) => {
    const q = new URLSearchParams(page.params)
    q.set('_count', String(count))
    q.set(name, cursor)
    return `${req.selfUrl}?${q}`
  }
  // The parameters this page applied (filters as normalised, _count and the cursor when given), not
  // whatever else the request carried.
  const applied = new URLSearchParams(page.params)
  if (req.query.has('_count')) applied.set('_count', String(count))
  for (const name of ['starting_after', 'ending_before']) if (req.query.has(name)) applied.set(name, req.query.get(name) as string)
  const self = applied.toString()
  const links = [{ relation: 'self', url: self ? `${req.selfUrl}?${self}` : req.selfUrl }]
  if (page.next) links.push({ relation: 'next', url: link('starting_after', page.next) })
  if (page.previous) links.push({ relation: 'previous', url: link('ending_before', page.previous) })
  const base = recordBase(req.selfUrl)
  return {
    resourceType: 'Bundle',
    type: 'searchset',
    total: page.total,
    link: links,
    entry: page.resources.map((r) => ({
      fullUrl: `${base}/${r.type}/${r.id}`,
      resource: JSON.parse(r.content),
      search: { mode: r.included ? 'include' : 'match' },
    })),
  }
}

/** Where the export's resources can be read with the organization's key: `{base}/patients/{id}/fhir`. */
export const recordBase = (exportUrl: string) => exportUrl.replace(/\/\$everything$/, '/fhir')
