// The built-in terminology is known loaded per pool, not per function that reaches it: every search goes
// through its own view of the pool (db/cancellable.ts), and a cache keyed by the view read term_state on
// every :in, :not-in, :above and :below search.
import { expect, test } from 'bun:test'
import type { Sql } from '../../db/client'
import { ensureBuiltinTerminology } from './builtin'

test('a store seen loaded through one view of the pool is not read again through another', async () => {
  const options = {}
  let statements = 0
  // Two views of one pool, as the router makes per request: new functions, the pool's options.
  const view = () =>
    Object.assign(
      (..._: unknown[]) => {
        statements++
        return Promise.resolve([{ loaded: true }])
      },
      { options },
    ) as unknown as Sql
  await ensureBuiltinTerminology(view())
  expect(statements).toBe(1)
  await ensureBuiltinTerminology(view())
  expect(statements).toBe(1)
})
