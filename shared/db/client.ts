// The postgres.js client. No transforms (postgres.camel would rewrite keys inside jsonb too).
import postgres from 'postgres'

export type Sql = postgres.Sql<{}>
export type TxSql = postgres.TransactionSql<{}>

/** `statementTimeoutMs`: the budget of every statement on the pool's connections (0 or absent: none),
 *  enforced by PostgreSQL itself (SQLSTATE 57014, mapped once in errors.ts). */
export function createSql(url: string, opts: { max?: number; planCacheMode?: string; statementTimeoutMs?: number } = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 20,
    onnotice: () => {},
    // bigint columns come back as strings; we only use them as opaque ids.
    types: {},
    connection: {
      application_name: 'fhir-platform',
      // No JIT: statements here read a page, and a generic plan's cost estimate for the branch it never
      // runs (search/bounded.ts) went over jit_above_cost: a 38 ms page spent 2.1 s compiling (issue 23).
      jit: 'off',
      ...(opts.planCacheMode ? { plan_cache_mode: opts.planCacheMode } : {}),
      ...(opts.statementTimeoutMs ? { statement_timeout: opts.statementTimeoutMs } : {}),
    },
  })
}

/**
 * Sets the statement budget of the transaction `tx` runs (0: keep the connection's). Sent without waiting
 * for its answer: it goes out with the transaction's first statement, costing no round trip.
 */
export function setTransactionTimeout(tx: TxSql, ms: number): void {
  if (ms > 0) void tx`select set_config('statement_timeout', ${String(ms)}, true)`.execute().catch(() => {})
}

/** Creates the database named in `url` when it does not exist (first start on a fresh server). */
export async function ensureDatabase(url: string): Promise<void> {
  const u = new URL(url)
  const name = decodeURIComponent(u.pathname.slice(1))
  if (!name) return
  u.pathname = '/postgres'
  const admin = postgres(u.toString(), { max: 1, onnotice: () => {} })
  try {
    const [row] = await admin`select 1 as ok from pg_database where datname = ${name}`
    if (!row)
      await admin`create database ${admin(name)}`.catch((e) => {
        // Created by another process meanwhile: 42P04, or 23505 when both inserted into pg_database at once.
        if (e.code !== '42P04' && e.code !== '23505') throw e
      })
  } finally {
    await admin.end()
  }
}

/**
 * Runs `fn` in a transaction whose statements get a plan for their parameter values (a custom plan),
 * whatever the pool's plan_cache_mode (DB_PLAN_CACHE_MODE, generic by default for the hot searches).
 * For rare, complex statements whose generic plan is much slower: $everything's snapshot took 26 ms
 * on its generic plan against 14 ms on a custom one (bench/everything.ts).
 */
export function withCustomPlans<T>(sql: Sql, fn: (tx: Sql) => Promise<T>): Promise<T> {
  return sql.begin(async (tx) => {
    await tx`set local plan_cache_mode = force_custom_plan`
    return fn(tx as unknown as Sql)
  }) as Promise<T>
}
