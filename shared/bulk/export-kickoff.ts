// $export kick-off: the request read (export-request.ts), its scope resolved (a Group's patient members,
// the patients named), transactionTime taken from the database's clock, and the job started.
// https://hl7.org/fhir/uv/bulkdata/STU2/export.html#bulk-data-kick-off-request
import { AppError } from '../errors'
import type { OperationInput } from '../fhir/operations/params'
import type { FhirContext } from '../fhir/request'
import type { Jobs } from '../jobs/queues'
import { BULK_EXPORT, type BulkJobHeader, startBulkJob } from './bulk-job'
import { type ExportLevel, type ExportParams, localPatientId, readExportRequest } from './export-request'
import type { ExportJobParams } from './export-job'
import { typeFilters } from './export-scan'

export interface ExportTarget {
  level: ExportLevel
  /** Group-level: the Group; Patient instance level: the Patient. */
  id?: string
}

/** Starts the export and returns its job id; 400/404 before anything is queued. */
export async function kickOffExport(
  ctx: FhirContext,
  jobs: Jobs,
  target: ExportTarget,
  input: OperationInput,
  names: string[],
  prefer: string | undefined,
  header: Omit<BulkJobHeader, 'transactionTime'>,
): Promise<string> {
  const params: ExportParams = readExportRequest(input, names, prefer, target.level, ctx.baseUrl)
  await typeFilters(ctx.repo.sql, params.typeFilters, ctx.baseUrl) // compiled as the job will: its errors are a 400 now
  if (target.level === 'group') {
    const members = await groupPatients(ctx, target.id as string)
    params.group = target.id
    if (params.patients) {
      const inGroup = new Set(members)
      params.patients = params.patients.filter((p) => inGroup.has(p))
    } else params.patients = members
  } else if (target.id !== undefined) {
    params.patients = params.patients ? params.patients.filter((p) => p === target.id) : [target.id]
  }
  if (params.patients && target.level === 'patient') await assertPatientsExist(ctx, params.patients)
  const [{ now }] = await ctx.repo.sql<{ now: Date }[]>`select now()`
  const job: ExportJobParams = { ...params, ...header, transactionTime: now.toISOString() }
  return startBulkJob(ctx.repo.sql, jobs, BULK_EXPORT, job, ctx.config.bulk.maxActivePerKey)
}

/** The Patients a Group has as members (Group.member.entity), as its current version says. */
async function groupPatients(ctx: FhirContext, id: string): Promise<string[]> {
  const group = await ctx.repo.read('Group', id)
  if (!group) throw new AppError('not-found', `Resource Group/${id} is not known`)
  if (group.deleted) throw new AppError('gone', `Resource Group/${id} was deleted`)
  const resource = JSON.parse(group.content as string)
  const ids = new Set<string>()
  for (const m of resource.member ?? []) {
    const id = localPatientId(m?.entity?.reference, ctx.baseUrl)
    if (id !== undefined) ids.add(id)
  }
  return [...ids]
}

async function assertPatientsExist(ctx: FhirContext, ids: string[]): Promise<void> {
  const rows = await ctx.repo.sql<{ id: string }[]>`select id from resource where res_type = 'Patient' and id = any(${ids}::text[]) and not deleted`
  const found = new Set(rows.map((r) => r.id))
  const missing = ids.find((id) => !found.has(id))
  if (missing !== undefined) throw new AppError('not-found', `Resource Patient/${missing} is not known`)
}
