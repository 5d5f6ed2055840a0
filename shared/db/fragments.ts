// Composing postgres.js fragments: dynamic SQL is built only from nested tagged templates.
import type postgres from 'postgres'
import type { Sql } from './client'

export type Fragment = postgres.PendingQuery<postgres.Row[]>

/**
 * `parts` joined by `sep` (e.g. sql` and `), as one fragment: one array of fragments, which postgres.js
 * writes one after the other (a space before each). Folded into nested pairs instead, a join of n parts
 * made n - 1 fragments, each a Query (a Promise) made per search and written one level deeper: a bounded
 * page's statement (bounded.ts) made hundreds.
 */
export function join(sql: Sql, parts: Fragment[], sep: Fragment): Fragment {
  if (parts.length === 0) throw new Error('join: no parts')
  if (parts.length === 1) return parts[0]
  const all: Fragment[] = [parts[0]]
  for (let i = 1; i < parts.length; i++) all.push(sep, parts[i])
  return sql`${all}`
}
