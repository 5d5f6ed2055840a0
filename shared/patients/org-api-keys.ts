// API keys of organizations (the patient API's bearer keys): random secrets shown once, stored as
// SHA-256, each pinning an API version. Separate from the FHIR server's own keys (table api_key).
// Verified keys are cached for a few seconds; a creation or revocation clears every node's cache at once
// (auth/key-changes.ts).
import { keysChanged, registerKeyCache } from '../auth/key-changes'
import type { Sql } from '../db/client'
import { apiError, notFound } from './api-error'
import { newId } from './ids'
import { getOrganization } from './organizations'
import { API_VERSIONS, isApiVersion, LATEST_API_VERSION } from './versions'

/** Who is calling: the organization and the key (its id and pinned version). */
export interface OrgPrincipal {
  organizationId: string
  keyId: string
  version: string
}

export interface OrgApiKey {
  id: string
  resource_type: 'api_key'
  organization_id: string
  label: string
  prefix: string
  version: string
  created_at: string
  revoked_at: string | null
}

interface KeyRow {
  id: string
  organization_id: string
  label: string
  prefix: string
  version: string
  created_at: Date
  revoked_at: Date | null
}

const KEY_PREFIX = 'pk_live_'

export function hashOrgKey(key: string): string {
  return new Bun.CryptoHasher('sha256').update(key).digest('hex')
}

const view = (r: KeyRow): OrgApiKey => ({
  id: r.id,
  resource_type: 'api_key',
  organization_id: r.organization_id,
  label: r.label,
  prefix: r.prefix,
  version: r.version,
  created_at: r.created_at.toISOString(),
  revoked_at: r.revoked_at?.toISOString() ?? null,
})

/** Creates a key; the secret is in the answer only (`key`), never stored or shown again. */
export async function createOrgApiKey(sql: Sql, organizationId: string, opts: { label?: string; version?: string } = {}): Promise<OrgApiKey & { key: string }> {
  await getOrganization(sql, organizationId)
  const version = opts.version ?? LATEST_API_VERSION
  if (!isApiVersion(version))
    throw apiError('invalid', 'unsupported_api_version', `Version '${version}' is not supported; accepted versions: ${API_VERSIONS.join(', ')}`, 'version')
  const key = KEY_PREFIX + Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
  const [row] = await sql<KeyRow[]>`
    insert into organization_api_key (id, organization_id, key_hash, prefix, label, version)
    values (${newId('key')}, ${organizationId}, ${hashOrgKey(key)}, ${key.slice(0, 12)}, ${opts.label ?? ''}, ${version})
    returning id, organization_id, label, prefix, version, created_at, revoked_at`
  await keysChanged(sql)
  return { ...view(row), key }
}

export async function listOrgApiKeys(sql: Sql, organizationId: string): Promise<OrgApiKey[]> {
  await getOrganization(sql, organizationId)
  const rows = await sql<KeyRow[]>`
    select id, organization_id, label, prefix, version, created_at, revoked_at
    from organization_api_key where organization_id = ${organizationId} order by created_at desc, id desc`
  return rows.map(view)
}

/** Revokes a key of the organization (idempotent); 404 when the organization has no such key. */
export async function revokeOrgApiKey(sql: Sql, organizationId: string, keyId: string): Promise<OrgApiKey> {
  const [row] = await sql<KeyRow[]>`
    update organization_api_key set revoked_at = coalesce(revoked_at, now())
    where id = ${keyId} and organization_id = ${organizationId}
    returning id, organization_id, label, prefix, version, created_at, revoked_at`
  if (!row) throw notFound('API key', keyId)
  await keysChanged(sql)
  return view(row)
}

export class OrgKeyVerifier {
  private readonly cache = new Map<string, { principal: OrgPrincipal | undefined; until: number }>()

  constructor(
    private readonly sql: Sql,
    private readonly ttlMs = 5_000,
  ) {
    registerKeyCache(this.cache)
  }

  /** The principal of a live key, or undefined for an unknown or revoked one. */
  async verify(key: string): Promise<OrgPrincipal | undefined> {
    const now = Date.now()
    const hit = this.cache.get(key)
    if (hit && hit.until > now) return hit.principal
    const [row] = await this.sql<{ id: string; organization_id: string; version: string }[]>`
      select id, organization_id, version from organization_api_key where key_hash = ${hashOrgKey(key)} and revoked_at is null`
    const principal = row ? { organizationId: row.organization_id, keyId: row.id, version: row.version } : undefined
    if (this.cache.size > 10_000) this.cache.clear()
    this.cache.set(key, { principal, until: now + this.ttlMs })
    return principal
  }
}
