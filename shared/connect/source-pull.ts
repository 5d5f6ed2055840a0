// Pulls one patient's records from a source FHIR server: `Patient/{id}/$everything` when its
// CapabilityStatement lists the operation, else the Patient read and a compartment search per type
// (https://hl7.org/fhir/R4/compartmentdefinition-patient.html); `next` links are followed; resources
// referenced from outside the compartment (Practitioner, Organization, Location, Medication...) are
// fetched by `_id` so that the stored copy resolves every reference it can. A pull is bounded: at most
// `maxPages` requests and `maxResources` resources (CONNECT_SYNC_MAX_PAGES, _RESOURCES), and a `next`
// link already requested (a loop) ends it with an error.
import { findReferences, localTarget } from '../fhir/references'
import { patientCompartmentTypes } from '../fhir/search/query/compartment'
import { type SourceSession, sourceError } from './source-session'

export interface PulledRecords {
  resources: any[]
  via: 'everything' | 'compartment'
  requests: number
}

export interface PullLimits {
  maxPages: number
  maxResources: number
}

const PAGE = 200
const PARALLEL = 6
const ID_CHUNK = 50
const REFERENCE_ROUNDS = 2

export async function pullPatientRecords(s: SourceSession, patientId: string, limits: PullLimits): Promise<PulledRecords> {
  const found = new Map<string, any>()
  const requested = new Set<string>()
  let requests = 0
  const get = (pathOrUrl: string, isNext = false) => {
    const url = s.resolve(pathOrUrl)
    if (isNext && requested.has(url)) throw sourceError(`the source's next link ${url} was already requested in this sync (a paging loop)`)
    if (requests >= limits.maxPages) throw sourceError(`the sync stopped after ${limits.maxPages} requests (CONNECT_SYNC_MAX_PAGES)`)
    requested.add(url)
    requests++
    return s.getJson(url)
  }
  const add = (r: any) => {
    if (!r?.resourceType || !r.id || r.resourceType === 'OperationOutcome') return
    found.set(`${r.resourceType}/${r.id}`, r)
    if (found.size > limits.maxResources)
      throw sourceError(`the source has more than ${limits.maxResources} resources for this patient (CONNECT_SYNC_MAX_RESOURCES)`)
  }
  const pages = async (first: string) => {
    let url: string | undefined = first
    for (let isNext = false; url; isNext = true) {
      const bundle = await get(url, isNext)
      for (const e of bundle?.entry ?? []) add(e.resource)
      url = (bundle?.link ?? []).find((l: any) => l.relation === 'next')?.url
    }
  }
  const cs = await get('metadata')
  const pid = encodeURIComponent(patientId)
  const everything = supportsEverything(cs)
  if (everything) await pages(`Patient/${pid}/$everything?_count=${PAGE}`)
  else {
    add(await get(`Patient/${pid}`))
    const offered = new Set(((cs?.rest?.[0]?.resource ?? []) as any[]).map((r) => r.type))
    const types = patientCompartmentTypes().filter((t) => offered.size === 0 || offered.has(t))
    await parallel(types, (t) => pages(`Patient/${pid}/${t}?_count=${PAGE}`))
  }
  // One or two rounds of referenced resources the pull did not bring (e.g. an Encounter's
  // serviceProvider, a PractitionerRole's Organization).
  for (let round = 0; round < REFERENCE_ROUNDS; round++) {
    const missing = new Map<string, Set<string>>()
    for (const r of found.values()) {
      for (const ref of findReferences(r)) {
        const t = targetOf(ref.value, s.baseUrl)
        if (t && !found.has(`${t.type}/${t.id}`)) missing.set(t.type, (missing.get(t.type) ?? new Set()).add(t.id))
      }
    }
    if (missing.size === 0) break
    const queries: string[] = []
    for (const [type, ids] of missing) {
      const list = [...ids]
      for (let i = 0; i < list.length; i += ID_CHUNK)
        queries.push(
          `${type}?_id=${list
            .slice(i, i + ID_CHUNK)
            .map(encodeURIComponent)
            .join(',')}&_count=${PAGE}`,
        )
    }
    await parallel(queries, pages)
  }
  return { resources: [...found.values()], via: everything ? 'everything' : 'compartment', requests }
}

/** A reference to a resource of the source: relative, or absolute under the source's base. */
export function targetOf(value: string, sourceBase: string): { type: string; id: string } | undefined {
  if (value.startsWith(`${sourceBase}/`)) return localTarget(value.slice(sourceBase.length + 1))
  return localTarget(value)
}

function supportsEverything(cs: any): boolean {
  const named = (ops: any[] | undefined) => (ops ?? []).some((o) => o?.name === 'everything' || String(o?.definition ?? '').endsWith('/Patient-everything'))
  const rest = cs?.rest?.[0]
  return named(rest?.operation) || named((rest?.resource ?? []).find((r: any) => r.type === 'Patient')?.operation)
}

async function parallel<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const lane = async () => {
    while (next < items.length) await fn(items[next++])
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, lane))
}
