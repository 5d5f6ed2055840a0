// The Prefer header of a Bulk Data kick-off: `respond-async` is required (HAPI-0513, as HAPI's
// BulkDataExportUtil.validatePreferAsyncHeader), `handling=lenient` lets unknown parameters through.
// https://hl7.org/fhir/uv/bulkdata/STU2/export.html#headers  https://www.rfc-editor.org/rfc/rfc7240
import { invalid } from '../errors'

/** Each preference and parameter of the header: split on `,` and on `;` too (RFC 7240's parameters,
 *  and how clients write several), as HAPI's RestfulServerUtils.parsePreferHeader reads it. */
function preferences(prefer: string | undefined): string[] {
  return (prefer ?? '')
    .split(/[,;]/)
    .map((p) =>
      p
        .trim()
        .toLowerCase()
        .replace(/\s*=\s*/, '='),
    )
    .filter(Boolean)
}

export function checkAsync(prefer: string | undefined, operation: string): void {
  if (!preferences(prefer).includes('respond-async'))
    throw invalid(`HAPI-0513: Must request async processing for ${operation} (send the header Prefer: respond-async)`)
}

export function parseLenient(prefer: string | undefined): boolean {
  return preferences(prefer).includes('handling=lenient')
}
