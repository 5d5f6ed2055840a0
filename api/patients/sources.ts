// FHIR source routes: GET /connections (list, q, type) and GET /connections/{id}, where the id is a
// `fhirsrc_` id or a raw FHIR base URL (percent-encoded or not; the rest of the path is the id).
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { badRequest } from '../../shared/patients/api-error'
import { getFhirSource, listFhirSources } from '../../shared/patients/fhir-sources'
import { ListCursor, listQuery } from '../../shared/patients/list-page'
import { ok, orgApi } from './org-api'

export function sourceRoutes(deps: AppDeps) {
  const api = orgApi(deps)
  const { sql } = deps
  return new Elysia({ name: 'patient-api-sources' })
    .get(
      '/connections',
      api.handle(async ({ principal, url }) => {
        const filters = { q: url.searchParams.get('q') || undefined, type: url.searchParams.get('type') || undefined }
        const cursor = ListCursor.of(deps.secret, principal.organizationId, 'connections', filters)
        return ok(await listFhirSources(sql, cursor, listQuery(url.searchParams, cursor), filters))
      }),
    )
    .get(
      '/connections/*',
      api.handle(async ({ url }) => ok(await getFhirSource(sql, sourceIdOf(url), 'id'))),
    )
}

function sourceIdOf(url: URL): string {
  // The raw path, so that a base URL with its own slashes (https://ehr.example.com/fhir/r4) stays whole.
  const raw = url.href
    .slice(url.origin.length)
    .replace(/[?#].*$/, '')
    .slice('/connections/'.length)
  try {
    return decodeURIComponent(raw)
  } catch {
    throw badRequest(`Invalid percent-encoding in the FHIR source id: ${raw}`, 'id')
  }
}
