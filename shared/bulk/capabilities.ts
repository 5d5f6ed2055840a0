// What the CapabilityStatement says of Bulk Data: the server instantiates the IG's bulk-data statement,
// with $export at system, Patient and Group level and HAPI's $import at system level. The operations are
// answered by the HTTP edge (api/fhir/bulk.ts), not the operation router, so they are listed here.
// https://hl7.org/fhir/uv/bulkdata/STU2/CapabilityStatement-bulk-data.html
export const BULK_DATA_CAPABILITY = 'http://hl7.org/fhir/uv/bulkdata/CapabilityStatement/bulk-data'

const EXPORT = 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/export'

/** The bulk operations of a type (`type`) or of the system (no type), as CapabilityStatement entries. */
export function bulkOperations(type?: string): { name: string; definition: string }[] {
  if (type === undefined)
    return [
      { name: 'export', definition: EXPORT },
      { name: 'import', definition: 'http://hapifhir.io/fhir/OperationDefinition/import' },
    ]
  if (type === 'Patient') return [{ name: 'export', definition: 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/patient-export' }]
  if (type === 'Group') return [{ name: 'export', definition: 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/group-export' }]
  return []
}
