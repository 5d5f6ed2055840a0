// Stores the records pulled from a source in our FHIR store, under OUR ids: each source resource keeps
// the id it was first given (connect_resource_map), so a re-sync updates instead of duplicating; the
// references between them are rewritten to our ids; `meta.source` names the source
// (`{fhir_base_url}#{fhirsrc_id}`, HAPI's `uri#request` form); the linked Patient carries the
// organization's patient-id identifier. Written as one transaction Bundle of PUTs (set-wise, and an
// unchanged resource is a no-op update, so an unchanged re-sync writes no new versions). A re-sync ends
// with exactly the source's current set: what an earlier pull stored and this one no longer finds (the
// source deleted it) is deleted here, in the same Bundle (a logical delete: its history is kept, and
// its mapping too, so that it comes back under the same id if the source brings it back).
import type { Sql } from '../db/client'
import { processBundle } from '../fhir/bundle/process'
import { rewriteReferences } from '../fhir/references'
import type { FhirContext } from '../fhir/request'
import { patientIdSystem } from '../patients/identifier'
import { targetOf } from './source-pull'

export interface RecordScope {
  organizationId: string
  patientId: string
  fhirSourceId: string
  fhirBaseUrl: string
  /** The patient's id at the source. */
  sourcePatientId: string
}

export interface StoreResult {
  total: number
  created: number
  updated: number
  unchanged: number
  /** Stored by an earlier pull, gone from the source now: deleted here. */
  deleted: number
  /** Our id of the linked Patient. */
  patientId?: string
}

export async function storeRecords(ctx: FhirContext, sql: Sql, scope: RecordScope, resources: any[]): Promise<StoreResult> {
  const sourceBase = scope.fhirBaseUrl.replace(/\/+$/, '')
  const ids = await ourIds(sql, scope, resources)
  const ourRef = (value: string): string | undefined => {
    const t = targetOf(value, sourceBase)
    if (!t) return undefined
    const mine = ids.get(`${t.type}/${t.id}`)
    // Not pulled: keep it pointing at the source, absolute (a relative one would dangle here).
    return mine ? `${t.type}/${mine}` : `${sourceBase}/${t.type}/${t.id}`
  }
  const none = new Map<string, string>()
  const system = patientIdSystem(scope.organizationId)
  let linked: string | undefined
  const entry = resources.map((src) => {
    const r = structuredClone(src)
    const id = ids.get(`${r.resourceType}/${r.id}`) as string
    r.id = id
    const { versionId, lastUpdated, source, ...meta } = r.meta ?? {}
    r.meta = { ...meta, source: `${sourceBase}#${scope.fhirSourceId}` }
    rewriteReferences(r, ourRef, none)
    if (r.resourceType === 'Patient' && src.id === scope.sourcePatientId) {
      linked = id
      const others = (r.identifier ?? []).filter((i: any) => i?.system !== system)
      r.identifier = [...others, { system, value: scope.patientId }]
    }
    return { fullUrl: `${ctx.baseUrl}/${r.resourceType}/${id}`, resource: r, request: { method: 'PUT', url: `${r.resourceType}/${id}` } }
  })
  // Without the linked Patient the pull is not the patient's whole set: nothing is taken as deleted.
  const gone = (linked ? await goneFromSource(sql, scope, resources) : []).map((g) => ({ request: { method: 'DELETE', url: `${g.res_type}/${g.our_id}` } }))
  const out: StoreResult = { total: resources.length, created: 0, updated: 0, unchanged: 0, deleted: 0, patientId: linked }
  const all = [...entry, ...gone]
  if (all.length === 0) return out
  const write = () =>
    processBundle(ctx, { resourceType: 'Bundle', type: 'transaction', entry: all }, { maxEntries: Math.max(ctx.config.maxBundleEntries, all.length) })
  // Two pulls of one connection at once (the callback's first pull and a periodic re-sync that found the
  // connection due) both create the resources new to us; the second to commit fails on their ids as a
  // whole (nothing written) and is written again, when they exist and are updated in place.
  const res = await write().catch((err) => {
    if ((err as { code?: string })?.code !== '23505') throw err
    return write()
  })
  for (const [i, e] of (JSON.parse(res.text as string).entry as any[]).entries()) {
    if (i >= entry.length) out.deleted++
    else if (String(e.response?.status).startsWith('201')) out.created++
    else if (JSON.stringify(e.response?.outcome ?? {}).includes('_NO_CHANGE')) out.unchanged++
    else out.updated++
  }
  return out
}

/** The live resources an earlier pull of this scope stored whose source resource this pull did not bring. */
async function goneFromSource(sql: Sql, scope: RecordScope, resources: any[]): Promise<{ res_type: string; our_id: string }[]> {
  return sql<{ res_type: string; our_id: string }[]>`
    select m.res_type, m.our_id from connect_resource_map m
    join resource r on r.res_type = m.res_type and r.id = m.our_id and not r.deleted
    where m.organization_id = ${scope.organizationId} and m.patient_id = ${scope.patientId} and m.fhir_source_id = ${scope.fhirSourceId}
      and (m.res_type, m.source_id) not in (
        select t, s from unnest(${resources.map((r) => r.resourceType as string)}::text[], ${resources.map((r) => String(r.id))}::text[]) as k(t, s))`
}

/** Our id for every pulled resource: the mapped one, or a new one recorded before the write (a crash
 *  in between leaves a mapping whose PUT simply creates the resource next time). */
async function ourIds(sql: Sql, scope: RecordScope, resources: any[]): Promise<Map<string, string>> {
  const types = resources.map((r) => r.resourceType as string)
  const sourceIds = resources.map((r) => String(r.id))
  const fresh = resources.map(() => crypto.randomUUID())
  const key = sql`${scope.organizationId}, ${scope.patientId}, ${scope.fhirSourceId}`
  if (resources.length > 0) {
    await sql`
      insert into connect_resource_map (organization_id, patient_id, fhir_source_id, res_type, source_id, our_id)
      select ${key}, t, s, o from unnest(${types}::text[], ${sourceIds}::text[], ${fresh}::text[]) as k(t, s, o)
      on conflict do nothing`
  }
  const rows = await sql<{ res_type: string; source_id: string; our_id: string }[]>`
    select res_type, source_id, our_id from connect_resource_map
    where organization_id = ${scope.organizationId} and patient_id = ${scope.patientId} and fhir_source_id = ${scope.fhirSourceId}`
  return new Map(rows.map((r) => [`${r.res_type}/${r.source_id}`, r.our_id]))
}
