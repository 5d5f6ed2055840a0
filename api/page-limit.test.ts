// The per-address limit's hook runs before every request of the app: Elysia must see it as synchronous,
// or it awaits it on every request (compose.mjs isAsync reads the hook's text for `return f(`, `=> f(`,
// async and await). Its refusals are tested in tests/hostile-page-rate-limit.test.ts.
import { expect, test } from 'bun:test'
import { loadConfig } from '../shared/config'
import { pageRateLimit } from './page-limit'
import type { AppDeps } from './deps'

test('the page limit hook reads as synchronous to Elysia', () => {
  const config = loadConfig({ DATABASE_URL: 'postgres://x@127.0.0.1/x', TOKEN_ENCRYPTION_KEY: 'be'.repeat(32) })
  const plugin = pageRateLimit({ config, publicBase: () => 'http://localhost' } as unknown as AppDeps)
  const hooks = (plugin as unknown as { event: { request: { fn: () => unknown }[] } }).event.request
  expect(hooks).toHaveLength(1)
  expect(hooks[0].fn.constructor.name).toBe('Function')
  expect(/(?:return|=>)\s?\S+\(|a(?:sync|wait)/.test(hooks[0].fn.toString())).toBe(false)
})
