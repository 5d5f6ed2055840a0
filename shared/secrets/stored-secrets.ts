// Every column that holds a secret, and the two passes over them: `rotate` re-encrypts what is not
// under the current key (`bun run secrets rotate`), and the one-time migration at start-up seals what
// earlier versions stored in plain text (SMART client secrets, PKCE verifiers, saved idempotent
// answers) or under the key they derived from the database (server_secret 'paging'; that derivation
// exists only here, to read those rows once). Rows are changed in batches, each row only if it still
// holds the value read (several nodes may start at once).
import { hkdfSync } from 'node:crypto'
import type { Sql } from '../db/client'
import { log } from '../log'
import { SecretCipher } from './cipher'

interface SecretColumn {
  table: string
  /** The primary key (one or two columns). */
  key: [string] | [string, string]
  column: string
}

export const SECRET_COLUMNS: SecretColumn[] = [
  { table: 'connection', key: ['id'], column: 'access_token' },
  { table: 'connection', key: ['id'], column: 'refresh_token' },
  { table: 'webhook_endpoint', key: ['id'], column: 'secret' },
  { table: 'fhir_source', key: ['id'], column: 'client_secret' },
  { table: 'connect_attempt', key: ['state'], column: 'code_verifier' },
  { table: 'idempotency_key', key: ['organization_id', 'key'], column: 'response' },
]

export interface ResealCount {
  table: string
  column: string
  resealed: number
  /** Rows no configured key opens (left as they are). */
  unreadable: number
}

const BATCH = 500
const MIGRATION = 'sealed-under-configured-key'

/** Re-encrypts every stored secret that is not under the current key (plain text included). */
export async function rotateStoredSecrets(sql: Sql, cipher: SecretCipher): Promise<ResealCount[]> {
  const out: ResealCount[] = []
  for (const c of SECRET_COLUMNS) out.push(await reseal(sql, cipher, c))
  return out
}

/**
 * Once per database: seals what earlier versions left in plain text or under the database-derived
 * key. Later starts find the migration recorded and do nothing.
 */
export async function sealLegacySecrets(sql: Sql, cipher: SecretCipher): Promise<ResealCount[] | undefined> {
  const [done] = await sql`select 1 from secret_migration where name = ${MIGRATION}`
  if (done) return undefined
  const [paging] = await sql<{ value: string }[]>`select value from server_secret where name = 'paging'`
  const legacy = paging ? [Buffer.from(hkdfSync('sha256', paging.value, 'fhir-platform', 'source-token-encryption', 32))] : []
  const counts = await rotateStoredSecrets(sql, cipher.withLegacyKeys(legacy))
  await sql`insert into secret_migration (name) values (${MIGRATION}) on conflict do nothing`
  const changed = counts.filter((c) => c.resealed || c.unreadable)
  if (changed.length) log.info('stored secrets sealed under the configured key', { counts: changed })
  const lost = counts.filter((c) => c.unreadable)
  if (lost.length) log.warn('some stored secrets open with no configured key; connections using them must reconnect', { counts: lost })
  return counts
}

async function reseal(sql: Sql, cipher: SecretCipher, c: SecretColumn): Promise<ResealCount> {
  const count: ResealCount = { table: c.table, column: c.column, resealed: 0, unreadable: 0 }
  const current = `v2.${cipher.currentKeyId.replace(/[_%\\]/g, '\\$&')}.%`
  let after: string[] | undefined
  for (;;) {
    const rows = await sql<{ k0: string; k1?: string; value: string }[]>`
      select ${keyList(sql, c)}, ${sql(c.column)} as value from ${sql(c.table)}
      where ${sql(c.column)} is not null and ${sql(c.column)} not like ${current}
        ${after ? sql`and ${keyAfter(sql, c, after)}` : sql``}
      order by ${sql(c.key)} limit ${BATCH}`
    if (rows.length === 0) return count
    const keys: string[][] = c.key.map(() => [])
    const olds: string[] = []
    const news: string[] = []
    for (const r of rows) {
      let plain: string
      try {
        plain = SecretCipher.isSealed(r.value) ? cipher.open(r.value) : r.value
      } catch {
        count.unreadable++
        continue
      }
      keys[0].push(r.k0)
      if (c.key.length === 2) keys[1].push(r.k1 as string)
      olds.push(r.value)
      news.push(cipher.seal(plain))
    }
    if (news.length) {
      const changed = await sql`
        update ${sql(c.table)} t set ${sql(c.column)} = v.sealed
        from unnest(${keys[0]}::text[], ${keys[1] ?? keys[0]}::text[], ${olds}::text[], ${news}::text[]) as v(k0, k1, old, sealed)
        where t.${sql(c.key[0])} = v.k0 ${c.key.length === 2 ? sql`and t.${sql(c.key[1] as string)} = v.k1` : sql``}
          and t.${sql(c.column)} = v.old`
      count.resealed += changed.count
    }
    const last = rows[rows.length - 1]
    after = c.key.length === 2 ? [last.k0, last.k1 as string] : [last.k0]
  }
}

const keyList = (sql: Sql, c: SecretColumn) =>
  c.key.length === 2 ? sql`${sql(c.key[0])} as k0, ${sql(c.key[1] as string)} as k1` : sql`${sql(c.key[0])} as k0`

const keyAfter = (sql: Sql, c: SecretColumn, after: string[]) =>
  c.key.length === 2 ? sql`(${sql(c.key[0])}, ${sql(c.key[1] as string)}) > (${after[0]}, ${after[1]})` : sql`${sql(c.key[0])} > ${after[0]}`
