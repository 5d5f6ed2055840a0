// Issue 19: a search whose client leaves is cancelled in PostgreSQL (the request's signal cancels its
// statements), rather than running on to its statement budget (60 s here).
import { expect, test } from 'bun:test'
import { useTestServer } from './harness'

const s = useTestServer({ SEARCH_STATEMENT_TIMEOUT_MS: '60000', MAX_SEARCH_PARAMETERS: '1000' })

/** Statements of the server running in the test database (the test's own connection left out). */
async function runningSearches(): Promise<number> {
  const [{ n }] = await s.sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and state = 'active' and query ilike '%idx_%'`
  return n
}

test('a client that leaves: its search stops in the database', async () => {
  const abort = new AbortController()
  const query = Array.from({ length: 400 }, (_, i) => `name=x${i}`).join('&')
  const pending = s.fhirFetch(`/Patient?${query}`, { signal: abort.signal }).catch((e) => e)
  for (let i = 0; i < 800 && (await runningSearches()) === 0; i++) await Bun.sleep(25)
  expect(await runningSearches()).toBe(1)
  abort.abort()
  await pending
  let running = 1
  for (let i = 0; i < 300 && running > 0; i++) {
    await Bun.sleep(50)
    running = await runningSearches()
  }
  expect(running).toBe(0) // within 15 s of leaving; the statement alone runs on for more than 30 s
}, 60_000)
