// The key that seals stored secrets, from the command line (shared/secrets/):
//   bun run secrets new-key   prints a fresh key for TOKEN_ENCRYPTION_KEY
//   bun run secrets rotate    re-encrypts every stored secret under the current TOKEN_ENCRYPTION_KEY
//                             (what earlier keys sealed opens with TOKEN_ENCRYPTION_RETIRED_KEYS)
import { newKeyText } from '../shared/secrets/keys'
import { rotateStoredSecrets } from '../shared/secrets/stored-secrets'
import { configOrExit, openRuntime } from '../shared/runtime'

const usage = 'usage: bun run secrets new-key | rotate'
const [cmd] = process.argv.slice(2)
if (cmd === 'new-key') console.log(newKeyText())
else if (cmd === 'rotate') {
  const rt = await openRuntime(configOrExit())
  try {
    const counts = await rotateStoredSecrets(rt.sql, rt.cipher)
    for (const c of counts) console.log(`${c.table}.${c.column}\t${c.resealed} re-encrypted${c.unreadable ? `\t${c.unreadable} no configured key opens` : ''}`)
    const lost = counts.reduce((n, c) => n + c.unreadable, 0)
    console.log(`all stored secrets are under key ${rt.cipher.currentKeyId}${lost ? `, except ${lost} that no configured key opens` : ''}`)
    if (lost) process.exitCode = 1
  } catch (err) {
    console.error(String((err as Error).message ?? err))
    process.exitCode = 1
  } finally {
    await rt.close()
  }
} else {
  console.error(usage)
  process.exitCode = 2
}
