// API keys from the command line: `bun run keys create <label> [read,write,admin,export]`, `list`, `revoke <id>`.
import { createApiKey, listApiKeys, revokeApiKey, SCOPES, type Scope } from '../shared/auth/api-keys'
import { configOrExit, openRuntime } from '../shared/runtime'

const [cmd, ...args] = process.argv.slice(2)
const usage = 'usage: bun run keys create <label> [scopes: read,write,admin,export] | list | revoke <id>'
const rt = await openRuntime(configOrExit())
try {
  if (cmd === 'create' && args[0]) {
    const scopes = (args[1] ?? 'read,write').split(',') as Scope[]
    const bad = scopes.filter((s) => !SCOPES.includes(s))
    if (bad.length) throw new Error(`unknown scope(s): ${bad.join(', ')}; valid: ${SCOPES.join(', ')}`)
    const { id, key } = await createApiKey(rt.sql, args[0], scopes)
    console.log(`created key ${id} (${scopes.join(',')}); shown once:\n${key}`)
  } else if (cmd === 'list') {
    for (const k of await listApiKeys(rt.sql))
      console.log(`${k.id}\t${k.prefix}…\t${k.scopes.join(',')}\t${k.label}\t${k.revoked_at ? `revoked ${k.revoked_at.toISOString()}` : 'active'}`)
  } else if (cmd === 'revoke' && args[0]) {
    console.log((await revokeApiKey(rt.sql, args[0])) ? `revoked key ${args[0]}` : `no active key ${args[0]}`)
  } else {
    console.error(usage)
    process.exitCode = 2
  }
} catch (err) {
  console.error(String((err as Error).message ?? err))
  process.exitCode = 1
} finally {
  await rt.close()
}
