// Statements that stop when their client leaves: a view of the pool whose queries (and those of the
// transactions begun on it) are cancelled in PostgreSQL when the client's signal aborts, as a request's
// signal does when its client disconnects. Without it a search kept running for minutes after its client
// had gone.
//
// Cheap on the hot path (issue 19's search CPU regression): a search that answers in a few milliseconds
// never looks at its client. The view makes its queries as the pool does (postgres.js's Query, with the
// pool's canceller) but hands them to its own handler, which postgres.js calls only when a statement is
// executed: the view learns of the few statements a search runs, not of every fragment it builds (about 35
// per search went through a wrapper that remembered each). A released view serves the pool's next request
// (a function carrying the pool's helpers, made once, not per request). A sweep looks at the views whose
// first statement is at least WATCH_MS old: one with a statement still running or queued
// reads its client's signal then (reading it costs Bun a few µs per request, and a signal read after the
// client left is already aborted) and cancels at once or when it aborts; one with nothing running is
// forgotten until it runs another. Under traffic the requests sweep, each first statement of a request
// once WATCH_MS / 2 has passed since the last sweep; a timer WATCH_MS ahead, pushed on by each sweep, sweeps
// when no request comes (a timer of its own woke the process 10 times a second, 50-70 µs of Bun's CPU each).
//
// A tagged template made through the view is a statement in waiting (Pending below), not a Query: a
// search builds 20 to 230 of them and runs one or two, and each Query is a Promise made with three
// closures (the pool made one per fragment: about a third of a µs each, 8-10 µs of a subject+code
// search). A Pending is a Query to postgres.js when it writes a statement (an instance of its class,
// with the strings and arguments it reads), and becomes the Query itself on the first use of one: then,
// catch, finally, execute, values... all hand over to the one Query it makes, which runs as the pool's
// would. Identifiers (`sql('r0')`, a table's name) are made once per pool too: each was escaped with two
// regular expressions per use.
import type { Sql } from './client'

interface RunningQuery {
  executed: boolean
  active: boolean
  state: unknown
  cancel(): unknown
}

/** What postgres.js hands a query when it is executed (a pool's or a transaction's own). */
type Handler = ((q: RunningQuery) => void) & { debug?: unknown }

/** How a pool (or a transaction) makes its queries: postgres.js 3.4's Query class, the handler that runs
 *  them and the canceller, read once from a query it made (a fragment, never run). */
interface Maker {
  Query: new (strings: TemplateStringsArray, args: unknown[], handler: Handler, canceller: unknown) => RunningQuery
  handler: Handler
  canceller: unknown
  /** The pool's helpers a view carries (FORWARDED that the pool has). */
  members: [string, unknown][]
  /** Released views of this pool, ready for another request. */
  free: Watch[]
  /** How the views of this pool make a statement in waiting (a Query once used). */
  Pending: PendingClass
  /** The pool's identifiers (`sql('name')`), made once each (up to MAX_IDENTIFIERS). */
  identifiers: Map<string, unknown>
}

/** A statement or fragment made through a view: postgres.js reads `strings` and `args` when it writes it
 *  into a statement (and marks it `fragment`); any other use makes the Query and hands over to it. */
interface Pending {
  strings: TemplateStringsArray
  args: unknown[]
  handler: Handler
  canceller: unknown
  query?: RunningQuery
}
type PendingClass = new (strings: TemplateStringsArray, args: unknown[], handler: Handler, canceller: unknown) => Pending

/** What a Query is used through (postgres.js 3.4's Query and Promise methods): each makes the Query once. */
const HANDED_OVER = [
  'then',
  'catch',
  'finally',
  'execute',
  'handle',
  'simple',
  'readable',
  'writable',
  'cursor',
  'describe',
  'stream',
  'forEach',
  'raw',
  'values',
  'cancel',
]

const pendingOf = new WeakMap<object, PendingClass>()

/** The Pending class of a Query class: its prototype inherits the Query's (so that postgres.js writes it as
 *  a fragment: `instanceof Query`), with each use handed over to the Query it makes. */
function pendingClass(Query: Maker['Query']): PendingClass {
  let P = pendingOf.get(Query)
  if (P) return P
  function made(p: Pending): RunningQuery {
    if (!p.query) p.query = new Query(p.strings, p.args, p.handler, p.canceller)
    return p.query
  }
  const proto = Object.create(Query.prototype) as Record<string | symbol, unknown>
  for (const name of HANDED_OVER)
    proto[name] = function (this: Pending, ...args: unknown[]) {
      const q = made(this) as unknown as Record<string, (...a: unknown[]) => unknown>
      return q[name](...args)
    }
  Object.defineProperty(proto, 'origin', {
    get(this: Pending) {
      return (made(this) as unknown as { origin: string }).origin
    },
  })
  P = function Pending(this: Pending, strings: TemplateStringsArray, args: unknown[], handler: Handler, canceller: unknown) {
    this.strings = strings
    this.args = args
    this.handler = handler
    this.canceller = canceller
  } as unknown as PendingClass
  ;(P as unknown as { prototype: object }).prototype = proto
  proto.constructor = P
  pendingOf.set(Query, P)
  return P
}

/** Identifiers kept per pool: the names search code writes (aliases, tables, columns) are a few dozen. */
const MAX_IDENTIFIERS = 1000

const makers = new WeakMap<object, Maker>()

function makerOf(sql: Sql): Maker {
  let m = makers.get(sql)
  if (!m) {
    const probe = sql`` as unknown as { constructor: Maker['Query']; handler?: Handler; canceller?: unknown }
    if (typeof probe.handler !== 'function' || typeof probe.canceller !== 'function')
      throw new Error('cancellable.ts: postgres.js queries no longer carry their handler and canceller')
    const pool = sql as unknown as Record<string, unknown>
    const members = FORWARDED.filter((k) => k in pool).map((k): [string, unknown] => [k, pool[k]])
    m = {
      Query: probe.constructor,
      handler: probe.handler,
      canceller: probe.canceller,
      members,
      free: [],
      Pending: pendingClass(probe.constructor),
      identifiers: new Map(),
    }
    makers.set(sql, m)
  }
  return m
}

/** What search code uses of the pool besides calling it (helpers; `options`, which caches key on; a
 *  transaction's savepoint). Listening, reserving and ending stay on the pool itself. */
const FORWARDED = ['unsafe', 'array', 'json', 'typed', 'types', 'file', 'options', 'savepoint']

/** Released views kept per pool for the next requests (each is a function with the pool's helpers). */
const MAX_FREE = 256

/** What tells that the client has gone; `signal` is read only once a statement has run for a while. */
export interface Client {
  readonly signal: AbortSignal
}

/** How long a view's statements may run before its client's signal is read (between 1 and 2 times this). */
export const WATCH_MS = 100

/** Sent or queued, not answered. */
const running = (q: RunningQuery) => q.active || !q.state

/** A request's view of a pool (or of a transaction begun on it) and what it watches. */
class Watch {
  /** Statements run through the view since it was last swept with nothing running. */
  made: RunningQuery[] = []
  /** When the view was put in `watched` (performance.now()); -1 while not watched. */
  since = -1
  /** Released, or its client's signal listened to: nothing left to sweep. */
  done = false
  /** An abort listener is on a client's signal: the view is never used again for another request. */
  private listened = false
  /** In its pool's free list (released twice, it would serve two requests at once). */
  private released = false
  /** The view: the pool's own function body for a tagged template (a statement or a fragment) but with
   *  this watch's handler, which postgres.js calls when a statement is executed; identifiers and helpers
   *  (sql('x'), sql(rows, 'a')) are the pool's. */
  readonly sql: Sql

  constructor(
    private client: Client,
    pool: Sql,
    private readonly maker: Maker,
  ) {
    const { Pending, handler: run, canceller, identifiers } = maker
    const handler: Handler = (q) => {
      this.add(q)
      run(q)
    }
    handler.debug = run.debug
    const view = function (strings: TemplateStringsArray, ...args: unknown[]) {
      if (strings && Array.isArray(strings.raw)) return new Pending(strings, args, handler, canceller)
      if (args.length > 0) return (pool as unknown as (...a: unknown[]) => unknown)(strings, ...args)
      if (typeof strings !== 'string') return (pool as unknown as (x: unknown) => unknown)(strings)
      let id = identifiers.get(strings)
      if (id === undefined) {
        id = (pool as unknown as (x: string) => unknown)(strings)
        if (identifiers.size < MAX_IDENTIFIERS) identifiers.set(strings, id)
      }
      return id
    }
    // The helpers are the pool's (or the transaction's) own, copied: made the prototype of each view, every
    // transaction gave JavaScriptCore new structures, and the search path cost more than the Proxy it replaced.
    const members = view as unknown as Record<string, unknown>
    for (const [k, v] of maker.members) members[k] = v
    if ('begin' in pool)
      members.begin = (...args: unknown[]) => {
        const body = args[args.length - 1] as (tx: Sql) => unknown
        return pool.begin(...(args.slice(0, -1) as []), ((tx: Sql) => body(this.inside(tx))) as never)
      }
    this.sql = view as unknown as Sql
  }

  /** The view of a transaction begun on this view: its statements are this watch's too. */
  private inside(tx: Sql): Sql {
    const w = new Watch(this.client, tx, makerOf(tx))
    w.add = (q) => this.add(q)
    return w.sql
  }

  add(q: RunningQuery): void {
    this.made.push(q)
    if (this.since < 0 && !this.done) {
      const now = performance.now()
      this.since = now
      watched.add(this)
      if (now - lastSweep >= WATCH_MS / 2) sweep(now)
      else if (!timer) arm()
    }
  }

  /** Called by the sweep once the view is old enough: still running, its client's signal decides. */
  check(): void {
    this.since = -1
    if (!this.made.some(running)) {
      this.made = []
      return
    }
    const signal = this.client.signal
    if (signal.aborted) return this.cancel()
    this.done = true
    this.listened = true
    signal.addEventListener('abort', () => this.cancel(), { once: true })
  }

  cancel(): void {
    for (const q of this.made) if (running(q)) q.cancel()
  }

  /** The request is answered: nothing more to watch, and its queries (and their rows) are not kept until
   *  the next sweep. A view no signal listens to serves the pool's next request. */
  release(): void {
    if (this.released) return
    this.released = true
    this.made.length = 0
    this.done = true
    if (this.since >= 0) {
      watched.delete(this)
      this.since = -1
    }
    const free = this.maker.free
    if (!this.listened && free.length < MAX_FREE) free.push(this)
  }

  /** Taken from the free list for another request. */
  reuse(client: Client): this {
    this.client = client
    this.made.length = 0 // anything run through it after its release
    this.done = false
    this.released = false
    return this
  }
}

const watched = new Set<Watch>()
let lastSweep = Number.NEGATIVE_INFINITY
let timer: ReturnType<typeof setTimeout> | undefined

/** The sweep when no request comes: WATCH_MS after the last sweep (or the first view watched since). */
function arm(): void {
  timer = setTimeout(swept, WATCH_MS)
  timer.unref?.()
}

function swept(): void {
  timer = undefined
  sweep(performance.now())
}

/** Checks the views watched for WATCH_MS or more (a statement found running between 1 and 2 times it). */
function sweep(now: number): void {
  lastSweep = now
  for (const w of watched) {
    if (now - w.since < WATCH_MS) continue
    watched.delete(w)
    w.check()
  }
  if (timer) clearTimeout(timer)
  timer = undefined
  if (watched.size > 0) arm()
}

/** What a cache of the pool keys on: the pool's options object, the same for the pool and every view of it
 *  (each view is a new function per request: a cache keyed by the function missed on every search). A
 *  transaction has no options of its own: it is its own key. */
export function poolOf(sql: Sql): object {
  return (sql as unknown as { options?: object }).options ?? sql
}

/** A view of `sql` whose statements are cancelled when `client`'s signal aborts (see above); `release`
 *  when the request is answered, and use neither it nor its `sql` after. */
export function cancelledOnAbort(sql: Sql, client: Client): { readonly sql: Sql; release(): void } {
  const maker = makerOf(sql)
  return maker.free.pop()?.reuse(client) ?? new Watch(client, sql, maker)
}
