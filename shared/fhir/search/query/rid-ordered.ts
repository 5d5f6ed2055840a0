// The rows of a token driver in rid order (one range of idx_token_rid_order, migration 0028): a sparse
// bounded page (bounded.ts) looks its candidates up in rid order and stops at the page, so it reads
// only as many rows as it probes; otherwise every row of the value is read and sorted first.
import type { Sql } from '../../../db/client'
import { splitEscaped, unescape } from '../escape'
import { storedCodes } from '../registry'
import type { Fragment } from '../types'
import { paramRows } from './param-sql'
import type { Criterion } from './query'

/**
 * The rids (`select i.rid`) of `c`'s rows among `type`, in rid order, or undefined when `c` is not one
 * token code (`code`, `system|code`, no modifier). The key's range selects the rows by code; the
 * parameter's own predicate (types/token.ts) decides which match.
 */
export function ridOrderedRows(sql: Sql, c: Criterion, type: string, baseUrl: string): Fragment | undefined {
  if (c.kind !== 'param' || c.def.type !== 'token' || c.modifier !== undefined || c.def.common === 'column' || c.values.length !== 1) return undefined
  const codes = storedCodes(c.def)
  const parts = splitEscaped(c.values[0], '|')
  const code = unescape(parts[parts.length - 1])
  if (codes.length !== 1 || parts.length > 2 || code === '') return undefined
  const { match } = paramRows(sql, c.def, c.modifier, c.values, { alias: 'r0', type, depth: 0 }, baseUrl)
  return sql`select i.rid from idx_token i where i.res_type = ${type} and i.code = ${codes[0]} and (i.value || '') = ${code} and (${match})`
}
