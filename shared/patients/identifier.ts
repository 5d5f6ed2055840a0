// How a FHIR Patient is linked to an organization's patient: it carries an identifier whose system
// names the organization and whose value is the organization's own patient_id. The Patient
// compartments of those FHIR Patients are that patient's records (export, $everything, sync).

const BASE = 'https://patient-connection.local/organizations'

/** The identifier system of an organization's patient ids, e.g. `.../organizations/org_123/patient-id`. */
export function patientIdSystem(organizationId: string): string {
  return `${BASE}/${organizationId}/patient-id`
}
