// A patient's stored FHIR records: the Patient compartments of the FHIR Patients that carry the
// organization's patient-id identifier (identifier.ts). Deleting a patient logically deletes them
// (a new, deleted version each, as DELETE /fhir/{type}/{id} does), set-wise in batches.
// https://hl7.org/fhir/R4/compartmentdefinition-patient.html
import type { Sql, TxSql } from '../db/client'
import type { WriteTx } from '../fhir/repo/repo'
import type { NewVersion, ResourceRow } from '../fhir/repo/types'
import { patientCompartmentLinks } from '../fhir/search/query/compartment'
import { patientIdSystem } from './identifier'

/** Ids of the live FHIR Patients linked to (organization, patient_id). */
export async function linkedFhirPatients(sql: Sql | TxSql, organizationId: string, patientId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select distinct r.id from idx_token t join resource r on r.rid = t.rid
    where t.res_type = 'Patient' and t.code = 'identifier' and t.system = ${patientIdSystem(organizationId)} and t.value = ${patientId}
      and not r.deleted`
  return rows.map((r) => r.id)
}

/** The live resources in the compartments of the given FHIR Patients (the Patients included). */
function compartmentRows(sql: Sql | TxSql, fhirPatientIds: string[]) {
  const { types, codes } = patientCompartmentLinks()
  return sql`
    select r.rid from resource r where r.res_type = 'Patient' and r.id = any(${fhirPatientIds}::text[]) and not r.deleted
    union
    select i.rid from idx_reference i
    join unnest(${types}::text[], ${codes}::text[]) as l(res_type, code) on l.res_type = i.res_type and l.code = i.code
    where i.target_type = 'Patient' and i.target_id = any(${fhirPatientIds}::text[])`
}

export async function countPatientRecords(sql: Sql | TxSql, fhirPatientIds: string[]): Promise<number> {
  if (fhirPatientIds.length === 0) return 0
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from (${compartmentRows(sql, fhirPatientIds)}) c`
  return row.n
}

/**
 * Logically deletes up to `limit` live resources of the compartments, in the write transaction `w`;
 * returns how many it deleted (fewer than `limit` means none are left).
 */
export async function deletePatientRecords(w: WriteTx, fhirPatientIds: string[], limit: number): Promise<number> {
  if (fhirPatientIds.length === 0) return 0
  const rows = await w.tx<ResourceRow[]>`
    select r.rid::text, r.res_type, r.id, r.version, r.last_updated, r.deleted, r.content
    from resource r where r.rid in (${compartmentRows(w.tx, fhirPatientIds)}) and not r.deleted
    order by r.rid limit ${limit}
    for update of r`
  if (rows.length === 0) return 0
  const now = new Date()
  const versions: NewVersion[] = rows.map((r) => ({
    rid: r.rid,
    type: r.res_type,
    id: r.id,
    version: r.version + 1,
    lastUpdated: now,
    deleted: true,
    content: null,
  }))
  await w.write(versions, new Set(versions.map((v) => v.rid)))
  return rows.length
}
