// The cancel-on-disconnect view of the pool (cancellable.ts), against real PostgreSQL: a quick statement
// never reads its client's signal (reading request.signal costs Bun a few µs per request, the search CPU
// regression of issue 19); a long one is cancelled when the client leaves, or at once when it had already
// left before the signal was read; statements inside a transaction begun on the view too; a released view
// serves the next request, never one whose earlier client is still listened to.
import { afterAll, expect, test } from 'bun:test'
import { cancelledOnAbort, WATCH_MS } from './cancellable'
import { createSql } from './client'

const sql = createSql(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', { max: 3 })
afterAll(() => sql.end())

/** A client whose signal counts how often it is read. */
function client() {
  const abort = new AbortController()
  const c = {
    reads: 0,
    abort: () => abort.abort(),
    get signal() {
      c.reads++
      return abort.signal
    },
  }
  return c
}

const cancelled = (p: Promise<unknown>) =>
  p.then(
    () => 'finished',
    (e: { code?: string }) => e.code,
  )

test('a statement that answers quickly: its client signal is never read', async () => {
  await Promise.all([sql`select 1`, sql`select 1`, sql`select 1`]) // the pool's connections made
  const c = client()
  const view = cancelledOnAbort(sql, c).sql
  const where = view`n > ${1}` // a fragment, never run on its own
  expect(await view`select n from generate_series(1, 3) n where ${where}`).toHaveLength(2)
  await Bun.sleep(WATCH_MS * 3)
  expect(c.reads).toBe(0)
})

test('a long statement is cancelled when its client leaves', async () => {
  const c = client()
  const view = cancelledOnAbort(sql, c).sql
  const started = performance.now()
  const long = cancelled(view`select pg_sleep(30)`.execute())
  await Bun.sleep(WATCH_MS * 3) // the sweep has read the signal and listens
  expect(c.reads).toBe(1)
  c.abort()
  expect(await long).toBe('57014')
  expect(performance.now() - started).toBeLessThan(10_000)
})

test('a client gone before its signal was read: the long statement is cancelled at the sweep', async () => {
  const c = client()
  const view = cancelledOnAbort(sql, c).sql
  c.abort()
  const started = performance.now()
  expect(await cancelled(view`select pg_sleep(30)`.execute())).toBe('57014')
  expect(performance.now() - started).toBeLessThan(10_000)
})

test('statements of a transaction begun on the view are cancelled too', async () => {
  const c = client()
  const view = cancelledOnAbort(sql, c).sql
  const tx = cancelled(view.begin(async (t) => t`select pg_sleep(30)`))
  await Bun.sleep(WATCH_MS * 3)
  c.abort()
  expect(await tx).toBe('57014')
})

test('a released view (its request answered) is no longer watched', async () => {
  const c = client()
  const made = cancelledOnAbort(sql, c)
  const long = cancelled(made.sql`select pg_sleep(1)`.execute())
  made.release()
  await Bun.sleep(WATCH_MS * 3)
  expect(c.reads).toBe(0)
  expect(await long).toBe('finished')
})

test('the view is the pool for everything else (helpers, options)', async () => {
  const view = cancelledOnAbort(sql, client()).sql
  expect(view.options).toBe(sql.options)
  const [row] = await view`select ${view.json({ a: 1 })}::jsonb as j, ${view('n')} from (select 1 as n) t`
  expect(row).toEqual({ j: { a: 1 }, n: 1 })
  const [u] = await view.unsafe('select 2 as n')
  expect(u.n).toBe(2)
  const inTx = await view.begin(async (t) => t`select ${t.array([1, 2])}::int[] as a`)
  expect(inTx[0].a).toEqual([1, 2])
})

test('a released view serves the next request: only its new client cancels it', async () => {
  // A quick request: nothing listens to its client.
  const quick = client()
  const first = cancelledOnAbort(sql, quick)
  await first.sql`select 1`
  first.release()
  // A slow one, listened to: its view is not used again (its client may still leave).
  const slow = client()
  const second = cancelledOnAbort(sql, slow)
  await second.sql`select pg_sleep(${(WATCH_MS * 3) / 1000})`
  expect(slow.reads).toBe(1)
  second.release()
  const next = client()
  const third = cancelledOnAbort(sql, next)
  let settled = false
  const long = cancelled(third.sql`select pg_sleep(30)`.execute()).finally(() => {
    settled = true
  })
  await Bun.sleep(WATCH_MS * 3)
  quick.abort()
  slow.abort()
  await Bun.sleep(WATCH_MS * 3)
  expect(settled).toBe(false)
  next.abort()
  expect(await long).toBe('57014')
  expect(quick.reads).toBe(0)
  third.release()
})

test('a view released twice serves one request at a time', () => {
  const a = cancelledOnAbort(sql, client())
  a.release()
  a.release()
  const b = cancelledOnAbort(sql, client())
  const c = cancelledOnAbort(sql, client())
  expect(b.sql).not.toBe(c.sql)
  b.release()
  c.release()
})

test('statements made through the view are used as the pool’s: fragments, values, raw, execute, catch, errors', async () => {
  const made = cancelledOnAbort(sql, client())
  const view = made.sql
  const n = view('n')
  expect(view('n')).toBe(n) // an identifier made once per pool
  const where = view`${n} > ${1} and ${view`${n} < ${4}`}`
  const rows = (q: Promise<unknown>) => q.then((r) => [...(r as unknown[])])
  expect(await rows(view`select ${n} from generate_series(1, 5) ${n} where ${where} order by 1`)).toEqual([{ n: 2 }, { n: 3 }])
  expect(await rows(view`select ${n} from generate_series(1, 2) ${n} order by 1`.values())).toEqual([[1], [2]])
  const raw = await view`select 7 as x`.raw()
  expect(raw[0][0]).toEqual(Buffer.from('7'))
  const statement = view`select 1 as one`
  expect(await rows(statement.execute())).toEqual([{ one: 1 }])
  expect(await rows(statement)).toEqual([{ one: 1 }]) // one statement, run once
  expect(await view`select 1 / 0`.catch((e: { code?: string }) => e.code)).toBe('22012')
  expect(await Promise.all([rows(view`select 1 as a`), rows(view`select 2 as b`)])).toEqual([[{ a: 1 }], [{ b: 2 }]])
  let finished = false
  await view`select 1`.finally(() => {
    finished = true
  })
  expect(finished).toBe(true)
  made.release()
})
