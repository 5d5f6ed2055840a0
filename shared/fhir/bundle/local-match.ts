// Conditional references to resources created earlier in the same Bundle, which are not stored yet:
// the match URL is evaluated in memory against their index rows. Criteria this cannot evaluate exactly
// (anything but token, string, uri, reference and _id values without modifiers) match nothing here and
// are left to the database search.
import { extractIndexes } from '../search/index/extract'
import { storedCodes } from '../search/registry'
import { unescape, splitEscaped } from '../search/escape'
import { parseSearch } from '../search/query/parse'
import type { Criterion } from '../search/query/query'
import { normalizeString } from '../search/types/string'

/** A resource the match URL is tried on; its index rows are extracted once, however many URLs are tried. */
export interface Candidate {
  id: string
  resource: any
  rows?: ReturnType<typeof extractIndexes>
}

/**
 * Candidates with an index of the exact values their rows hold (token codes, uris, reference target ids,
 * ids), built on first use: a match URL with such a criterion is tried only on the few candidates that
 * hold one of its values, so trying every URL of a large Bundle on every resource of it stays linear.
 */
export class IndexedCandidates {
  private byValue?: Map<string, Candidate[]>
  constructor(readonly all: Candidate[]) {}

  holding(value: string): Candidate[] {
    if (!this.byValue) {
      this.byValue = new Map()
      for (const c of this.all) {
        c.rows ??= extractIndexes(c.resource)
        const values = new Set<string | null>([
          c.id,
          ...c.rows.token.map((t) => t.value),
          ...c.rows.uri.map((u) => u.value),
          ...c.rows.reference.map((r) => r.targetId),
        ])
        for (const v of values) {
          if (v === null || v === undefined) continue
          const list = this.byValue.get(v)
          if (list) list.push(c)
          else this.byValue.set(v, [c])
        }
      }
    }
    return this.byValue.get(value) ?? []
  }
}

/** `query`: as written in a URL (a `+` is a plus sign, as in match URLs), or already parsed. */
export function localMatches(candidates: Candidate[] | IndexedCandidates, type: string, query: string | URLSearchParams): string[] {
  if ((Array.isArray(candidates) ? candidates : candidates.all).length === 0) return []
  let q
  try {
    const params = typeof query === 'string' ? new URLSearchParams(query.replaceAll('+', '%2B')) : query
    q = parseSearch([type], params, { defaultCount: 2, maxCount: 2 })
  } catch {
    return [] // the database search reports the error
  }
  const out: string[] = []
  for (const c of Array.isArray(candidates) ? candidates : narrow(candidates, q.criteria)) {
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

/**
 * The candidates that may match every criterion: those holding a value of the first criterion whose
 * values are all exact (an id, a token code, a uri, a reference); all of them when there is none.
 */
function narrow(candidates: IndexedCandidates, criteria: Criterion[]): Candidate[] {
  for (const cr of criteria) {
    if (cr.kind !== 'param' || cr.modifier !== undefined) continue
    const keys = cr.values.map((raw) => exactValue(cr.def.code, cr.def.type, raw))
    if (keys.some((k) => k === undefined)) continue
    return [...new Set(keys.flatMap((k) => candidates.holding(k as string)))]
  }
  return candidates.all
}

function exactValue(code: string, type: string, raw: string): string | undefined {
  if (code === '_id' || type === 'uri') return unescape(raw)
  if (type === 'token') {
    const parts = splitEscaped(raw, '|')
    const value = unescape(parts[parts.length - 1])
    return value === '' ? undefined : value
  }
  if (type === 'reference') {
    const ref = unescape(raw)
    return ref.slice(ref.lastIndexOf('/') + 1)
  }
  return undefined
}
