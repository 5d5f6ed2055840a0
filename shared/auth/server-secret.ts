// A random secret created once per database and read by every node: the cluster shares it without
// configuration. Used to sign paging links, so a node only serves links some node issued.
import type { Sql } from '../db/client'

export async function loadServerSecret(sql: Sql, name = 'paging'): Promise<string> {
  const value = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
  await sql`insert into server_secret (name, value) values (${name}, ${value}) on conflict (name) do nothing`
  const [row] = await sql<{ value: string }[]>`select value from server_secret where name = ${name}`
  return row.value
}
