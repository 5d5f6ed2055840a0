// Conditional references to resources created earlier in the same Bundle, which are not stored yet:
// the match URL is evaluated in memory against their index rows. Criteria this cannot evaluate exactly
// (anything but token, string, uri, reference and _id values without modifiers) match nothing here and
// are left to the database search.
import { extractIndexes } from '../search/extract'
import { storedCodes } from '../search/registry'
import { unescape, splitEscaped } from '../search/escape'
import { parseSearch } from '../search/parse'
import { normalizeString } from '../search/params/string'

/** A resource the match URL is tried on; its index rows are extracted once, however many URLs are tried. */
export interface Candidate {
  id: string
  resource: any
  rows?: ReturnType<typeof extractIndexes>
}

/** `query`: as written in a URL (a `+` is a plus sign, as in match URLs), or already parsed. */
export function localMatches(candidates: Candidate[], type: string, query: string | URLSearchParams): string[] {
  if (candidates.length === 0) return []
  let q
  try {
    const params = typeof query === 'string' ? new URLSearchParams(query.replaceAll('+', '%2B')) : query
    q = parseSearch([type], params, { defaultCount: 2, maxCount: 2 })
  } catch {
    return [] // the database search reports the error
  }
  const out: string[] = []
  for (const c of candidates) {
    c.rows ??= extractIndexes(c.resource)
    const rows = c.rows
    const ok = q.criteria.every((cr) => {
      if (cr.kind !== 'param' || cr.modifier !== undefined) return false
      const code = cr.def.code
      const codes = storedCodes(cr.def) // a union parameter matches on its members' rows
      return cr.values.some((raw) => {
        if (code === '_id') return unescape(raw) === c.id
        switch (cr.def.type) {
          case 'token': {
            const parts = splitEscaped(raw, '|').map(unescape)
            return rows.token.some(
              (t) =>
                codes.includes(t.code) &&
                (parts.length === 1
                  ? t.value === parts[0]
                  : (parts[0] === '' ? t.system === null : t.system === parts[0]) && (parts[1] === '' || t.value === parts[1])),
            )
          }
          case 'string':
            return rows.string.some((s) => codes.includes(s.code) && s.value_norm.startsWith(normalizeString(unescape(raw))))
          case 'uri':
            return rows.uri.some((u) => codes.includes(u.code) && u.value === unescape(raw))
          case 'reference':
            return rows.reference.some((r) => r.code === code && `${r.targetType}/${r.targetId}` === unescape(raw))
          default:
            return false
        }
      })
    })
    if (ok && q.criteria.length > 0) out.push(c.id)
  }
  return out
}
