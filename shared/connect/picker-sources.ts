// The sources the hosted picker shows: the flow's recommended ones first (in the order given), then the
// catalog, or the catalog entries whose name matches the patient's search; and the flow's connections.
import type { Sql } from '../db/client'

export interface PickerSource {
  id: string
  name: string
  type: string | null
  logo_url: string | null
  portal_url: string | null
}

export interface FlowConnectionItem {
  id: string
  fhir_source_id: string
  source_name: string
  status: string
  failure_code: string | null
  sync_status: string | null
  sync_total: number | null
}

export const PICKER_LIMIT = 50

export async function pickerSources(
  sql: Sql,
  recommendedIds: string[],
  search: string | undefined,
): Promise<{ recommended: PickerSource[]; others: PickerSource[] }> {
  const like = search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined
  const recommended = recommendedIds.length
    ? await sql<PickerSource[]>`
        select id, name, type, logo_url, portal_url from fhir_source where id = any(${recommendedIds}::text[])
        ${like ? sql`and name ilike ${like}` : sql``}`
    : []
  recommended.sort((a, b) => recommendedIds.indexOf(a.id) - recommendedIds.indexOf(b.id))
  const others = await sql<PickerSource[]>`
    select id, name, type, logo_url, portal_url from fhir_source
    where not (id = any(${recommendedIds}::text[])) ${like ? sql`and name ilike ${like}` : sql``}
    order by lower(name), id limit ${PICKER_LIMIT}`
  return { recommended: [...recommended], others: [...others] }
}

export async function flowConnectionItems(sql: Sql, flowId: string): Promise<FlowConnectionItem[]> {
  return sql<FlowConnectionItem[]>`
    select c.id, c.fhir_source_id, s.name as source_name, c.status, c.failure_code, c.sync_status, c.sync_total
    from connection c join fhir_source s on s.id = c.fhir_source_id
    where c.flow_id = ${flowId} order by c.created_at, c.seq`
}
