// The catalog of FHIR sources (connection targets), managed by operators. The API shows name, type and
// URLs; the SMART client credentials (client_id, client_secret, scopes) are read by the connect flow
// through sourceCredentials() and never returned by the API; the client secret is sealed at rest. A
// base URL the outbound client would refuse (loopback, private, metadata... unless OUTBOUND_ALLOW names
// it) is refused here already.
import type { Sql } from '../db/client'
import type { Outbound } from '../net/client'
import { OutboundRefused } from '../net/target'
import type { SecretCipher } from '../secrets/cipher'
import { apiError, badRequest, invalidData, notFound } from './api-error'
import { newId } from './ids'
import { type ListCursor, type ListPage, type ListQuery } from './list-page'

export interface FhirSource {
  id: string
  resource_type: 'fhir_source'
  name: string
  type: string | null
  fhir_base_url: string
  logo_url: string | null
  portal_url: string | null
}

export interface FhirSourceInput {
  name: string
  type?: string | null
  fhir_base_url: string
  logo_url?: string | null
  portal_url?: string | null
  client_id?: string | null
  client_secret?: string | null
  scopes?: string | null
}

/** What writing the catalog needs besides the database. */
export interface CatalogDeps {
  sql: Sql
  cipher: SecretCipher
  outbound: Outbound
}

export interface SourceCredentials {
  id: string
  fhirBaseUrl: string
  clientId: string | null
  clientSecret: string | null
  scopes: string | null
}

interface SourceRow {
  id: string
  name: string
  type: string | null
  fhir_base_url: string
  logo_url: string | null
  portal_url: string | null
  created_at: Date
  seq: string
}

export const sourceView = (r: SourceRow): FhirSource => ({
  id: r.id,
  resource_type: 'fhir_source',
  name: r.name,
  type: r.type,
  fhir_base_url: r.fhir_base_url,
  logo_url: r.logo_url,
  portal_url: r.portal_url,
})

/** A base URL as stored and matched: no trailing slash. */
export function normalizeBaseUrl(url: string): string {
  return url.trim().replace(/\/+$/, '')
}

export function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s)
    return u.protocol === 'http:' || u.protocol === 'https:'
  } catch {
    return false
  }
}

export async function createFhirSource({ sql, cipher, outbound }: CatalogDeps, input: FhirSourceInput): Promise<FhirSource> {
  if (!input.name?.trim()) throw badRequest('name is required', 'name')
  for (const f of ['fhir_base_url', 'logo_url', 'portal_url'] as const) {
    const v = input[f]
    if (v !== undefined && v !== null && !isHttpUrl(v)) throw invalidData(f, `${f} must be an http(s) URL`)
  }
  if (!input.fhir_base_url) throw badRequest('fhir_base_url is required', 'fhir_base_url')
  const base = normalizeBaseUrl(input.fhir_base_url)
  await checkReachable(outbound, base)
  const secret = input.client_secret ? cipher.seal(input.client_secret) : null
  const [row] = await sql<SourceRow[]>`
    insert into fhir_source (id, name, type, fhir_base_url, logo_url, portal_url, client_id, client_secret, scopes)
    values (${newId('fhirsrc')}, ${input.name}, ${input.type ?? null}, ${base}, ${input.logo_url ?? null}, ${input.portal_url ?? null},
            ${input.client_id ?? null}, ${secret}, ${input.scopes ?? null})
    on conflict (fhir_base_url) do nothing
    returning id, name, type, fhir_base_url, logo_url, portal_url, created_at, seq::text`
  if (!row) throw apiError('conflict', 'resource_conflict', `A FHIR source with fhir_base_url ${base} already exists`, 'fhir_base_url')
  return sourceView(row)
}

/** Changes the given fields of a source (operators); absent fields are kept. */
export async function updateFhirSource({ sql, cipher, outbound }: CatalogDeps, id: string, input: Partial<FhirSourceInput>): Promise<FhirSource> {
  const current = await sql<(SourceRow & { client_id: string | null; client_secret: string | null; scopes: string | null })[]>`
    select *, seq::text from fhir_source where id = ${id}`
  if (!current[0]) throw notFound('FHIR source', id)
  const c = current[0]
  const next = { ...c, ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) }
  for (const f of ['fhir_base_url', 'logo_url', 'portal_url'] as const) {
    const v = next[f]
    if (v !== null && !isHttpUrl(v)) throw invalidData(f, `${f} must be an http(s) URL`)
  }
  const base = normalizeBaseUrl(next.fhir_base_url)
  if (base !== c.fhir_base_url) await checkReachable(outbound, base)
  const secret = input.client_secret === undefined ? c.client_secret : input.client_secret === null ? null : cipher.seal(input.client_secret)
  const [row] = await sql<SourceRow[]>`
    update fhir_source set name = ${next.name}, type = ${next.type}, fhir_base_url = ${base},
      logo_url = ${next.logo_url}, portal_url = ${next.portal_url}, client_id = ${next.client_id},
      client_secret = ${secret}, scopes = ${next.scopes}
    where id = ${id}
    returning id, name, type, fhir_base_url, logo_url, portal_url, created_at, seq::text`
  return sourceView(row)
}

export async function deleteFhirSource(sql: Sql, id: string): Promise<void> {
  const rows = await sql`delete from fhir_source where id = ${id} returning id`.catch((e) => {
    if (e.code === '23503') throw badRequest(`FHIR source ${id} is used by flows or connections and cannot be deleted`)
    throw e
  })
  if (rows.length === 0) throw notFound('FHIR source', id)
}

/** A source by `fhirsrc_` id or by its raw FHIR base URL; 404 resource_not_found otherwise. */
export async function getFhirSource(sql: Sql, idOrUrl: string, param?: string): Promise<FhirSource> {
  const row = await findSourceRow(sql, idOrUrl)
  if (!row) throw notFound('FHIR source', idOrUrl, param)
  return sourceView(row)
}

/** Resolves ids or base URLs to source ids; the first unknown one is 400 naming `param`. */
export async function resolveSourceIds(sql: Sql, idsOrUrls: string[], param: string): Promise<string[]> {
  if (idsOrUrls.length === 0) return []
  const urls = idsOrUrls.map(normalizeBaseUrl)
  const rows = await sql<{ id: string; fhir_base_url: string }[]>`
    select id, fhir_base_url from fhir_source where id = any(${idsOrUrls}::text[]) or fhir_base_url = any(${urls}::text[])`
  return idsOrUrls.map((v, i) => {
    const hit = rows.find((r) => r.id === v || r.fhir_base_url === urls[i])
    if (!hit) throw invalidData(param, `Unknown FHIR source '${v}'`)
    return hit.id
  })
}

/** For the connect flow: where the source is and the SMART client credentials to use with it. */
export async function sourceCredentials(sql: Sql, cipher: SecretCipher, id: string): Promise<SourceCredentials> {
  const [row] = await sql<{ id: string; fhir_base_url: string; client_id: string | null; client_secret: string | null; scopes: string | null }[]>`
    select id, fhir_base_url, client_id, client_secret, scopes from fhir_source where id = ${id}`
  if (!row) throw notFound('FHIR source', id)
  const clientSecret = row.client_secret === null ? null : cipher.open(row.client_secret)
  return { id: row.id, fhirBaseUrl: row.fhir_base_url, clientId: row.client_id, clientSecret, scopes: row.scopes }
}

/** A base URL the connect flow could never reach (a refused target) is a 400 naming fhir_base_url. */
async function checkReachable(outbound: Outbound, base: string): Promise<void> {
  try {
    await outbound.checkUrl(base)
  } catch (err) {
    if (err instanceof OutboundRefused) throw invalidData('fhir_base_url', `fhir_base_url is refused: ${err.message}`)
    throw err
  }
}

/** GET /connections: `q` (case-insensitive substring of the name) and `type` (exact). */
export async function listFhirSources(sql: Sql, cursor: ListCursor, q: ListQuery, filters: { q?: string; type?: string }): Promise<ListPage<FhirSource>> {
  const like = filters.q ? `%${filters.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined
  const rows = await sql<SourceRow[]>`
    select id, name, type, fhir_base_url, logo_url, portal_url, created_at, seq::text from fhir_source
    where true
      ${like ? sql`and name ilike ${like}` : sql``}
      ${filters.type ? sql`and type = ${filters.type}` : sql``}
      ${q.after ? sql`and (created_at, seq) < (${q.after.createdAt}, ${q.after.seq}::bigint)` : sql``}
    order by fhir_source.created_at desc, fhir_source.seq desc
    limit ${q.limit + 1}`
  return cursor.page(rows, q.limit, sourceView)
}

async function findSourceRow(sql: Sql, idOrUrl: string): Promise<SourceRow | undefined> {
  const [row] = await sql<SourceRow[]>`
    select id, name, type, fhir_base_url, logo_url, portal_url, created_at, seq::text from fhir_source
    where id = ${idOrUrl} or fhir_base_url = ${normalizeBaseUrl(idOrUrl)} limit 1`
  return row
}
