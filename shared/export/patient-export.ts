// The patient API's export (`GET /patients/{id}/$everything`): the latest stored FHIR resources of an
// organization's patient as a paged searchset Bundle. Owned by the export work (issue 7); the
// patient API route resolves the organization and the patient, then calls this.
import { AppError } from '../errors'
import type { Repo } from '../fhir/repo/repo'
import type { Redis } from '../redis'

export interface PatientExportDeps {
  repo: Repo
  /** Page caches live here; absent in the embedded form. */
  redis?: Redis
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

/** The export Bundle page. Bad parameters throw AppError('invalid') with `details.param` naming it. */
export async function exportPatientPage(_deps: PatientExportDeps, _req: PatientExportRequest): Promise<unknown> {
  throw new AppError('fault', 'export not built yet')
}
