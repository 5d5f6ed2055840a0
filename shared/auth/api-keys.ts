// API keys of the FHIR server: random secrets shown once, stored as SHA-256, with scopes. Verified keys
// are cached in memory for a few seconds; a creation or revocation clears the caches of every node at once
// (key-changes.ts), the few seconds bound what a lost notification could leave.
import type { Sql } from '../db/client'
import { keysChanged, registerKeyCache } from './key-changes'

/** `export`: Bulk Data $export (kick-off, status, files) and nothing else. */
export type Scope = 'read' | 'write' | 'admin' | 'export'
export const SCOPES: readonly Scope[] = ['read', 'write', 'admin', 'export']

export interface Principal {
  keyId: string
  label: string
  scopes: ReadonlySet<Scope>
}

const KEY_PREFIX = 'fk_'
/** The principal of the embedded owner's local token (the CLI on the same machine). */
export const LOCAL_KEY_ID = 'local'

export function generateKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return KEY_PREFIX + Buffer.from(bytes).toString('base64url')
}

export function hashKey(key: string): string {
  return new Bun.CryptoHasher('sha256').update(key).digest('hex')
}

export function hasScope(p: Pick<Principal, 'scopes'>, scope: Scope): boolean {
  return p.scopes.has('admin') || p.scopes.has(scope) || (scope === 'read' && p.scopes.has('write'))
}

export async function createApiKey(sql: Sql, label: string, scopes: Scope[]): Promise<{ id: string; key: string }> {
  const key = generateKey()
  const [row] = await sql<{ id: string }[]>`
    insert into api_key (key_hash, prefix, label, scopes) values (${hashKey(key)}, ${key.slice(0, 10)}, ${label}, ${scopes})
    returning id::text`
  await keysChanged(sql)
  return { id: row.id, key }
}

export async function listApiKeys(sql: Sql) {
  return sql<{ id: string; prefix: string; label: string; scopes: string[]; created_at: Date; revoked_at: Date | null }[]>`
    select id::text, prefix, label, scopes, created_at, revoked_at from api_key order by api_key.id`
}

export async function revokeApiKey(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql`update api_key set revoked_at = now() where id = ${id} and revoked_at is null returning id`
  await keysChanged(sql)
  return rows.length > 0
}

/** On a fresh database, creates the first admin key and returns it (once); otherwise undefined. */
export async function ensureBootstrapKey(sql: Sql): Promise<string | undefined> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(727002)`
    const [row] = await tx`select 1 from api_key limit 1`
    if (row) return undefined
    const key = generateKey()
    await tx`insert into api_key (key_hash, prefix, label, scopes) values (${hashKey(key)}, ${key.slice(0, 10)}, 'bootstrap admin', ${['admin']})`
    return key
  }) as Promise<string | undefined>
}

export class ApiKeyVerifier {
  private readonly cache = new Map<string, { principal: Principal | undefined; until: number }>()

  constructor(
    private readonly sql: Sql,
    /** localKey: the embedded owner's token for the CLI on the same machine (shared/db/data-dir-owner.ts). */
    private readonly opts: { adminKey?: string; localKey?: string; ttlMs?: number } = {},
  ) {
    registerKeyCache(this.cache)
  }

  /** The principals of ADMIN_API_KEY and the local key, made once (nothing changes a principal). */
  private readonly admin = { principal: { keyId: 'env', label: 'ADMIN_API_KEY', scopes: new Set<Scope>(['admin']) } as Principal }
  private readonly local = { principal: { keyId: LOCAL_KEY_ID, label: 'local CLI', scopes: new Set<Scope>(['admin']) } as Principal }

  async verify(key: string): Promise<Principal | undefined> {
    const known = this.known(key)
    return known ? known.principal : this.lookUp(key)
  }

  /** The answer for `key` when it needs no database (ADMIN_API_KEY, the local key, a key looked up less
   *  than the cache's time ago), else undefined: what a request checks before awaiting anything. */
  known(key: string): { principal: Principal | undefined } | undefined {
    if (this.opts.adminKey && key.length === this.opts.adminKey.length && timingSafeEqual(key, this.opts.adminKey)) return this.admin
    if (this.opts.localKey && key.length === this.opts.localKey.length && timingSafeEqual(key, this.opts.localKey)) return this.local
    const hit = this.cache.get(key)
    return hit && hit.until > Date.now() ? hit : undefined
  }

  private async lookUp(key: string): Promise<Principal | undefined> {
    const now = Date.now()
    const [row] = await this.sql<{ id: string; label: string; scopes: Scope[] }[]>`
      select id::text, label, scopes from api_key where key_hash = ${hashKey(key)} and revoked_at is null`
    const principal = row ? { keyId: row.id, label: row.label, scopes: new Set(row.scopes) } : undefined
    if (this.cache.size > 10_000) this.cache.clear()
    this.cache.set(key, { principal, until: now + (this.opts.ttlMs ?? 5_000) })
    return principal
  }
}

function timingSafeEqual(a: string, b: string): boolean {
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}
