// The second step of a transaction: the references of its resources rewritten. A placeholder becomes
// the Type/id its entry was given (HAPI-0541 for one no entry has), a conditional reference the one
// resource it matches, among the Bundle's new resources and the stored ones (HAPI-1091 none, HAPI-1092
// several). https://hl7.org/fhir/R4/http.html#trules  https://hl7.org/fhir/R4/http.html#cond-refs
import { AppError } from '../../errors'
import { findReferences, isConditionalReference, rewriteReferences } from '../references'
import type { WriteTx } from '../repo/repo'
import { resolveMatchReference } from '../interactions/match-references'
import type { MatchBase } from '../search/query/conditional'
import { type Identities, type Planned, substitute } from './identities'
import { localMatches } from './local-match'
import { inEntry, inEntrySync } from './results'

export async function resolveReferences(w: WriteTx, base: MatchBase, { plans, placeholders }: Identities): Promise<void> {
  const conditionalRefs = new Map<string, string>()
  for (const p of plans) {
    if (!p.resource) continue
    for (const ref of findReferences(p.resource)) {
      if (!isConditionalReference(ref.value) || conditionalRefs.has(ref.value)) continue
      await inEntry(p.entry, async () => conditionalRefs.set(ref.value, await resolveReference(w, base, ref.value, plans, placeholders)))
    }
  }
  for (const p of plans) {
    if (!p.resource) continue
    p.references = inEntrySync(p.entry, () =>
      rewriteReferences(
        p.resource,
        (value) => {
          if (value.startsWith('urn:uuid:') || value.startsWith('urn:oid:')) {
            const target = placeholders.get(value)
            if (!target)
              throw new AppError(
                'invalid',
                `HAPI-0541: Unable to satisfy placeholder ID ${value} found in element named 'reference' within resource of type: ${p.type}`,
              )
            return target
          }
          return placeholders.get(value) ?? conditionalRefs.get(value)
        },
        placeholders,
      ),
    )
  }
}

async function resolveReference(w: WriteTx, base: MatchBase, value: string, plans: Planned[], placeholders: Map<string, string>): Promise<string> {
  const q = value.indexOf('?')
  const type = value.slice(0, q)
  const local = localMatches(
    plans.filter((p) => (p.action === 'create' || p.action === 'update') && p.type === type).map((p) => ({ id: p.id, resource: p.resource })),
    type,
    value.slice(q + 1),
  )
  return resolveMatchReference(w, base, value, local, substitute(value.slice(q + 1), placeholders))
}
