// Statements that stop when their client leaves: a view of the pool whose queries (and those of the
// transactions begun on it) are cancelled in PostgreSQL when the client's signal aborts, as a request's
// signal does when its client disconnects. Without it a search kept running for minutes after its client
// had gone.
//
// Cheap on the hot path (issue 19's search CPU regression): a search that answers in a few milliseconds
// never looks at its client. The view is a plain function over the pool (no Proxy: every fragment a search
// builds goes through it) that only remembers what it made. A sweep every WATCH_MS looks at the views whose
// first statement is at least WATCH_MS old: one with a statement still running or queued reads its client's
// signal then (reading it costs Bun a few µs per request, and a signal read after the client left is
// already aborted) and cancels at once or when it aborts; one with nothing running is forgotten until it
// issues again.
import type { Sql } from './client'

interface RunningQuery {
  executed: boolean
  active: boolean
  state: unknown
  cancel(): unknown
}

/** What tells that the client has gone; `signal` is read only once a statement has run for a while. */
export interface Client {
  readonly signal: AbortSignal
}

/** How long a view's statements may run before its client's signal is read (between 1 and 2 times this). */
export const WATCH_MS = 100

/** Sent or queued, not answered: a fragment never run (not executed) would reject with no one awaiting it. */
const running = (q: RunningQuery) => q.executed && (q.active || !q.state)

class Watch {
  /** Queries and fragments made through the view since it was last swept with nothing running. */
  made: RunningQuery[] = []
  /** The sweep count when the view was put in `watched`; -1 while not watched. */
  since = -1
  /** The abort listener is on the client's signal: nothing left to sweep. */
  listening = false

  constructor(private readonly client: Client) {}

  add(q: RunningQuery): void {
    this.made.push(q)
    if (this.since < 0 && !this.listening) {
      this.since = sweeps
      watched.add(this)
      timer ??= setInterval(sweep, WATCH_MS)
      timer.unref?.()
    }
  }

  /** Called by the sweep once the view is old enough: still running, its client's signal decides. */
  check(): void {
    this.since = -1
    if (!this.made.some(running)) {
      // Kept: queries made but not run yet (a statement built now and awaited later).
      this.made = this.made.filter((q) => !q.executed)
      return
    }
    const signal = this.client.signal
    if (signal.aborted) return this.cancel()
    this.listening = true
    signal.addEventListener('abort', () => this.cancel(), { once: true })
  }

  cancel(): void {
    for (const q of this.made) if (running(q)) q.cancel()
  }

  /** The request is answered: nothing more to watch, and its queries (and their rows) are not kept
   *  until the next sweep. */
  release(): void {
    this.made = []
    this.listening = true
    if (this.since >= 0) {
      watched.delete(this)
      this.since = -1
    }
  }

  view<S extends Sql>(sql: S): S {
    const watch = this
    const view = function (this: unknown, ...args: unknown[]) {
      const q = (sql as unknown as (...a: unknown[]) => unknown)(...args)
      // Queries (statements and fragments) are Promises; identifiers and helpers (sql('x')) are not.
      if (q instanceof Promise) watch.add(q as unknown as RunningQuery)
      return q
    }
    // The helpers are the pool's (or the transaction's) own, copied: made the prototype of each view, every
    // transaction (a new function per request) gave JavaScriptCore new structures, and the search path
    // cost more than the Proxy it replaced.
    const members = view as unknown as Record<string, unknown>
    for (const k of FORWARDED) if (k in sql) members[k] = (sql as unknown as Record<string, unknown>)[k]
    if ('begin' in sql)
      members.begin = (...args: unknown[]) => {
        const body = args[args.length - 1] as (tx: Sql) => unknown
        return sql.begin(...(args.slice(0, -1) as []), ((tx: Sql) => body(watch.view(tx))) as never)
      }
    return view as unknown as S
  }
}

/** What search code uses of the pool besides calling it (helpers; `options`, which caches key on; a
 *  transaction's savepoint). Listening, reserving and ending stay on the pool itself. */
const FORWARDED = ['unsafe', 'array', 'json', 'typed', 'types', 'file', 'options', 'savepoint']

const watched = new Set<Watch>()
let sweeps = 0
let timer: ReturnType<typeof setInterval> | undefined

function sweep(): void {
  sweeps++
  for (const w of watched) {
    if (w.since >= sweeps - 1) continue // watched since the last sweep: younger than WATCH_MS
    watched.delete(w)
    w.check()
  }
  if (watched.size === 0 && timer) {
    clearInterval(timer)
    timer = undefined
  }
}

/** What a cache of the pool keys on: the pool's options object, the same for the pool and every view of it
 *  (each view is a new function per request: a cache keyed by the function missed on every search). A
 *  transaction has no options of its own: it is its own key. */
export function poolOf(sql: Sql): object {
  return (sql as unknown as { options?: object }).options ?? sql
}

/** A view of `sql` whose statements are cancelled when `client`'s signal aborts (see above); `release`
 *  when the request is answered. */
export function cancelledOnAbort(sql: Sql, client: Client): { sql: Sql; release(): void } {
  const watch = new Watch(client)
  return { sql: watch.view(sql), release: () => watch.release() }
}
