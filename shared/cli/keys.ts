// `bun run keys`: API keys of the FHIR server. create <label> [read,write,admin,export] | list | revoke <id>.
import { createApiKey, listApiKeys, revokeApiKey, SCOPES, type Scope } from '../auth/api-keys'
import type { Sql } from '../db/client'
import { type CliResult, cliFailure, cliResult, cliUsage } from './output'

export const KEYS_USAGE = 'usage: bun run keys create <label> [scopes: read,write,admin,export] | list | revoke <id>'

export async function runKeys(deps: { sql: Sql }, argv: string[]): Promise<CliResult> {
  const [cmd, ...args] = argv
  const res = cliResult()
  try {
    if (cmd === 'create' && args[0]) {
      const scopes = (args[1] ?? 'read,write').split(',') as Scope[]
      const bad = scopes.filter((s) => !SCOPES.includes(s))
      if (bad.length) throw new Error(`unknown scope(s): ${bad.join(', ')}; valid: ${SCOPES.join(', ')}`)
      const { id, key } = await createApiKey(deps.sql, args[0], scopes)
      res.out.push(`created key ${id} (${scopes.join(',')}); shown once:\n${key}`)
    } else if (cmd === 'list') {
      for (const k of await listApiKeys(deps.sql))
        res.out.push(`${k.id}\t${k.prefix}…\t${k.scopes.join(',')}\t${k.label}\t${k.revoked_at ? `revoked ${new Date(k.revoked_at).toISOString()}` : 'active'}`)
    } else if (cmd === 'revoke' && args[0]) {
      res.out.push((await revokeApiKey(deps.sql, args[0])) ? `revoked key ${args[0]}` : `no active key ${args[0]}`)
    } else return cliUsage(res, KEYS_USAGE)
    return res
  } catch (err) {
    return cliFailure(res, err)
  }
}
