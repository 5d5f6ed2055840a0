// What the write tests (create, update, delete, Prefer) read back: storage outcome codes, version rows.
import { expect } from 'bun:test'
import { createResource, readJson, type TestServer } from './harness'

export const STORAGE_CODES = 'https://hapifhir.io/fhir/CodeSystem/hapi-fhir-storage-response-code'

export async function outcomeText(res: Response): Promise<{ body: any; diagnostics: string }> {
  const body = await readJson(res)
  expect(body.resourceType).toBe('OperationOutcome')
  return { body, diagnostics: (body.issue ?? []).map((i: any) => i.diagnostics ?? '').join('\n') }
}

export function storageCode(outcome: any): string | undefined {
  return outcome.issue?.[0]?.details?.coding?.find((c: any) => c.system === STORAGE_CODES)?.code
}

/** Writes through the test server: POST (expects 201), PUT, and the stored version numbers. */
export function writes(s: TestServer) {
  return {
    create: (resource: any) => createResource(s, resource),
    put: (resource: any, headers: Record<string, string> = {}): Promise<Response> =>
      s.fhirFetch(`/${resource.resourceType}/${resource.id}`, { method: 'PUT', json: resource, headers }),
    async versionRows(type: string, id: string): Promise<number[]> {
      const rows = await s.sql<{ version: number }[]>`
        select version from resource where res_type = ${type} and id = ${id}
        union all
        select h.version from resource_history h where h.res_type = ${type} and h.id = ${id}
        order by version`
      return rows.map((r) => r.version)
    },
  }
}
