// Conditional references (inline match URLs, `"reference": "Organization?identifier=s|v"`): each
// rewritten to the one resource it matches before the write, on a create, update or patch as in a
// transaction.
// HAPI resolves them on every write (allowInlineMatchUrlReferences, on by default;
// SearchParamWithInlineReferencesExtractor): none is 404 HAPI-1091, several 412 HAPI-1092.
// https://hl7.org/fhir/R4/http.html#cond-refs
import { AppError } from '../../errors'
import { findReferences, isConditionalReference, rewriteReferences } from '../references'
import type { WriteTx } from '../repo/repo'
import { type MatchBase, resolveConditional } from '../search/query/conditional'

/** Whether `resource` holds a conditional reference (the write then resolves them in its transaction). */
export function hasMatchReferences(resource: any): boolean {
  return findReferences(resource).some((r) => isConditionalReference(r.value))
}

/**
 * `Type/id` of the one resource the conditional reference `value` matches. `local`: ids of resources
 * of the same write not stored yet that match it (a transaction's new resources); `query`: the criteria
 * to search, when they differ from those written in `value` (placeholders replaced).
 */
export async function resolveMatchReference(w: WriteTx, base: MatchBase, value: string, local: string[] = [], query?: string): Promise<string> {
  const q = value.indexOf('?')
  const type = value.slice(0, q)
  const several = () => new AppError('precondition-failed', `HAPI-1092: Invalid match URL "${value}" - Multiple resources match this search`)
  if (local.length > 1) throw several()
  const match = await resolveConditional(w, base, type, query ?? value.slice(q + 1))
  const ids = new Set([...local, ...match.matches.map((m) => m.id)])
  if (ids.size === 0) throw new AppError('not-found', `HAPI-1091: Invalid match URL "${value}" - No resources match this search`)
  if (ids.size > 1) throw several()
  return `${type}/${[...ids][0]}`
}

/** Rewrites, in place, every conditional reference of `resource` (a create's or update's body) to its match. */
export async function resolveMatchReferences(w: WriteTx, base: MatchBase, resource: any): Promise<void> {
  const resolved = new Map<string, string>()
  for (const ref of findReferences(resource)) {
    if (isConditionalReference(ref.value) && !resolved.has(ref.value)) resolved.set(ref.value, await resolveMatchReference(w, base, ref.value))
  }
  if (resolved.size > 0) rewriteReferences(resource, (value) => resolved.get(value), new Map())
}
