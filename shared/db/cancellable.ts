// Statements that stop when their client leaves: a view of the pool whose queries (and those of the
// transactions begun on it) are cancelled in PostgreSQL when `signal` aborts, as a request's signal does
// when its client disconnects. Without it a search kept running for minutes after its client had gone.
import type { Sql } from './client'

interface RunningQuery {
  executed: boolean
  active: boolean
  state: unknown
  cancel(): unknown
}

export function cancelledOnAbort(sql: Sql, signal: AbortSignal): Sql {
  let issued: Set<RunningQuery> | undefined
  const cancelAll = () => {
    // Only what was sent or queued: a fragment never run would reject with no one awaiting it.
    for (const q of issued ?? []) if (q.executed && (q.active || !q.state)) q.cancel()
  }
  const track = <S extends object>(target: S): S =>
    new Proxy(target, {
      apply(fn, self, args) {
        const q = Reflect.apply(fn as (...a: unknown[]) => unknown, self, args) as RunningQuery
        if (q && typeof q === 'object' && 'executed' in q) {
          if (!issued) {
            issued = new Set()
            signal.addEventListener('abort', cancelAll, { once: true })
          }
          issued.add(q)
        }
        return q
      },
      get(fn, prop, receiver) {
        if (prop !== 'begin') return Reflect.get(fn, prop, receiver)
        return (...args: unknown[]) => {
          const body = args[args.length - 1] as (tx: Sql) => unknown
          return (fn as unknown as Sql).begin(...(args.slice(0, -1) as []), ((tx: Sql) => body(track(tx))) as never)
        }
      },
    })
  return track(sql)
}
