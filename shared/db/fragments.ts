// Composing postgres.js fragments: dynamic SQL is built only from nested tagged templates.
import type postgres from 'postgres'
import type { Sql } from './client'

export type Fragment = postgres.PendingQuery<postgres.Row[]>

/** `parts` joined by `sep` (e.g. sql` and `), as one fragment. */
export function join(sql: Sql, parts: Fragment[], sep: Fragment): Fragment {
  return parts.reduce((acc, p, i) => (i === 0 ? p : sql`${acc}${sep}${p}`))
}
