// What sealing stored secrets and the hosted page's token cost per call, in process (no I/O): seal and
// open a 300-byte value (a token; an idempotent answer is larger), sign a flow id (each flow `url` in an
// answer) and verify a page token (each hosted-page request).
// Run: bun run bench/secrets.ts
import { SecretCipher } from '../shared/secrets/cipher'
import { secretKey } from '../shared/secrets/keys'

const cipher = new SecretCipher({ current: secretKey(Buffer.alloc(32, 1)), retired: [], source: 'TOKEN_ENCRYPTION_KEY' })
const sealed = cipher.seal('x'.repeat(300))
const token = cipher.sign('hosted-page', 'pf_0123456789abcdefghijklmn')
const cases: [string, () => unknown][] = [
  ['seal 300 B', () => cipher.seal('x'.repeat(300))],
  ['open 300 B', () => cipher.open(sealed)],
  ['sign a flow id (page token)', () => cipher.sign('hosted-page', 'pf_0123456789abcdefghijklmn')],
  ['verify a page token', () => cipher.verify('hosted-page', 'pf_0123456789abcdefghijklmn', token)],
]
for (const [name, fn] of cases) {
  for (let i = 0; i < 2000; i++) fn()
  const n = 50_000
  const t = performance.now()
  for (let i = 0; i < n; i++) fn()
  console.log(`${name}: ${(((performance.now() - t) / n) * 1000).toFixed(1)} µs`)
}
