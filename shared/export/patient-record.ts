// One resource of a patient's export, read with the organization's key: what every `fullUrl` of the
// patient API's export points at (`{base}/patients/{id}/fhir/{type}/{id}`), so that an integrator can
// resolve each entry, and each relative reference inside one, without a FHIR server key. Only the
// resources the export holds are readable there: the linked Patients, their compartments, and what
// those reference (one level, as the export includes them); anything else is not found.
import type { Sql } from '../db/client'
import { patientIdSystem } from '../patients/identifier'
import { compartmentMembers, selectedPatients } from './everything-query'

/** The current JSON of `type/id` when the organization's patient's export holds it; undefined otherwise. */
export async function readExportedRecord(sql: Sql, organizationId: string, patientId: string, type: string, id: string): Promise<string | undefined> {
  const selector = { kind: 'identifier' as const, system: patientIdSystem(organizationId), value: patientId }
  const [row] = await sql<{ content: string }[]>`
    with pat as (${selectedPatients(sql, selector)}),
    ${compartmentMembers(sql)}
    select r.content from resource r
    where r.res_type = ${type} and r.id = ${id} and not r.deleted
      and (r.rid in (select rid from members)
        or exists (select 1 from idx_reference i join members m on m.rid = i.rid where i.target_type = ${type} and i.target_id = ${id}))`
  return row?.content
}
