// The first step of a transaction: which resource each write entry is about, in HAPI's order (DELETE,
// POST, PUT, PATCH). Conditional creates, updates, deletes and patches are matched (a duplicate
// conditional create answers as the entry it repeats), new resources are given ids, and every fullUrl
// is mapped to the Type/id it stands for. https://hl7.org/fhir/R4/http.html#transaction
import { AppError } from '../../errors'
import type { WriteTx } from '../repo/repo'
import type { StoredVersion } from '../repo/types'
import type { FoundReference } from '../references'
import { conditionalUpdateId } from '../interactions/update'
import { bodyIdMismatch } from '../resource-errors'
import { type ConditionalMatch, type MatchBase, noMatch, parseMatchUrl, resolveConditional, singleMatch } from '../search/query/conditional'
import type { BundleEntry } from './entries'
import { inEntry } from './results'

export interface Planned {
  entry: BundleEntry
  /** What the entry does once resolved. */
  action: 'create' | 'update' | 'patch' | 'delete' | 'noop'
  type: string
  id: string
  /** The rid of a new resource, when reserved here. */
  rid?: string
  resource?: any
  /** For a conditional create that matched. */
  existing?: StoredVersion
  /** A duplicate conditional create of this bundle: it answers as the entry it repeats. */
  aliasOf?: Planned
  /** The match of a conditional create, or of a conditional update, that creates: checked against the
   *  created resource after the write, and against the Bundle's other writes (HAPI-0542). */
  match?: ConditionalMatch
  /** The id was assigned by the server (not subject to the client-id rules). */
  serverId?: boolean
  /** A conditional update that matched nothing, by its match URL (update.ts planUpdate). */
  createsFor?: string
  /** The `reference` values of `resource` once rewritten (references.ts). */
  references?: FoundReference[]
}

export interface Identities {
  plans: Planned[]
  /** fullUrl -> Type/id. */
  placeholders: Map<string, string>
}

/**
 * Resolves the identity of every write entry (`writes`, in HAPI's order). `allocated`: rids already
 * reserved for the creates; more are taken from `w` when conditional updates need them.
 */
export async function resolveIdentities(
  w: WriteTx,
  base: MatchBase,
  writes: BundleEntry[],
  allocated: string[],
  allocate: (n: number) => Promise<string[]>,
): Promise<Identities> {
  const placeholders = new Map<string, string>()
  const seen: Seen = { placeholders, conditionalCreates: new Map(), deleted: new Set() }
  const plans: Planned[] = []
  const needRids: Planned[] = []
  for (const e of writes) {
    const p = await inEntry(e, () => identify(w, base, e, seen))
    plans.push(p)
    if ((p.action === 'create' || p.action === 'update') && p.id === '' && !p.aliasOf) needRids.push(p)
    if (p.action === 'create' && p.match) seen.conditionalCreates.set(p.match.url.normalised, p)
    if (p.action === 'delete') seen.deleted.add(`${p.type}/${p.id}`)
  }
  const rids = needRids.length <= allocated.length ? allocated : [...allocated, ...(await allocate(needRids.length - allocated.length))]
  needRids.forEach((p, i) => {
    p.rid = rids[i]
    p.id = rids[i]
    p.serverId = true
    if (p.entry.fullUrl) placeholders.set(p.entry.fullUrl, `${p.type}/${p.id}`)
  })
  for (const p of plans) {
    if (!p.aliasOf) continue
    p.id = p.aliasOf.id
    if (p.entry.fullUrl) placeholders.set(p.entry.fullUrl, `${p.type}/${p.id}`)
  }
  return { plans, placeholders }
}

/** What the entries identified so far (earlier in HAPI's order) tell the next one. */
interface Seen {
  /** fullUrl -> Type/id. */
  placeholders: Map<string, string>
  /** Normalised match URL of a conditional create -> its first entry (HAPI's resolved match URLs). */
  conditionalCreates: Map<string, Planned>
  /** Type/id of every resource a DELETE entry deletes (HAPI: TransactionDetails.getDeletedResourceIds). */
  deleted: Set<string>
}

async function identify(w: WriteTx, base: MatchBase, e: BundleEntry, seen: Seen): Promise<Planned> {
  const { placeholders, conditionalCreates } = seen
  const type = e.type as string
  if (e.method === 'POST') {
    if (!e.ifNoneExist) return { entry: e, action: 'create', type, id: '', resource: e.resource }
    const match = await resolveConditional(w, base, type, substitute(e.ifNoneExist, placeholders))
    const dup = conditionalCreates.get(match.url.normalised)
    if (dup && !e.fullUrl && !dup.entry.fullUrl)
      throw new AppError(
        'invalid',
        `HAPI-2008: Unable to process Transaction - Request contains multiple anonymous entries (Bundle.entry.fullUrl not populated) with conditional URL: "${match.url.text}". Does transaction request contain duplicates?`,
      )
    if (dup) return { entry: e, action: 'noop', type, id: dup.id, existing: dup.existing, aliasOf: dup }
    const found = await singleMatch(w, base, 'CREATE', match)
    // A match this Bundle deletes (DELETE entries come first) no longer counts: the create creates
    // (HAPI: BaseHapiFhirResourceDao.doCreateForPostOrPut, getDeletedResourceIds).
    const existing = found && !seen.deleted.has(`${type}/${found.id}`) ? found : undefined
    if (!existing) return { entry: e, action: 'create', type, id: '', resource: e.resource, match }
    const p: Planned = { entry: e, action: 'noop', type, id: existing.id, existing }
    conditionalCreates.set(match.url.normalised, p)
    if (e.fullUrl) placeholders.set(e.fullUrl, `${type}/${existing.id}`)
    return p
  }
  if (e.id === undefined) {
    // Conditional PUT / DELETE / PATCH. One whose URL a conditional create of this Bundle resolved (POST
    // entries come before PUT and PATCH) is about the resource that create makes, as HAPI resolves a
    // match URL from the transaction's resolved match URLs before searching.
    const matchUrl = substitute(e.query as string, placeholders)
    const created = conditionalCreates.get(parseMatchUrl(type, matchUrl).normalised)
    if (created?.action === 'create' && e.method !== 'DELETE')
      return { entry: e, action: e.method === 'PUT' ? 'update' : 'patch', type, id: '', resource: e.resource, aliasOf: created }
    const match = await resolveConditional(w, base, type, matchUrl)
    const found = await singleMatch(w, base, e.method === 'PUT' ? 'UPDATE' : e.method === 'DELETE' ? 'DELETE' : 'PATCH', match)
    if (e.method === 'DELETE') return { entry: e, action: found ? 'delete' : 'noop', type, id: found?.id ?? '' }
    if (e.method === 'PATCH') {
      if (!found) throw noMatch(match)
      return { entry: e, action: 'patch', type, id: found.id }
    }
    const id = conditionalUpdateId(match, found, e.resource) ?? ''
    if (e.fullUrl && id !== '') placeholders.set(e.fullUrl, `${type}/${id}`)
    if (found) return { entry: e, action: 'update', type, id, resource: e.resource }
    return { entry: e, action: 'update', type, id, resource: e.resource, createsFor: match.url.text, match }
  }
  if (e.method === 'PUT') {
    if (e.resource.id !== undefined && e.resource.id !== e.id) throw bodyIdMismatch(e.resource.id, e.id)
    if (e.fullUrl) placeholders.set(e.fullUrl, `${type}/${e.id}`)
  }
  return { entry: e, action: e.method === 'PUT' ? 'update' : e.method === 'PATCH' ? 'patch' : 'delete', type, id: e.id, resource: e.resource }
}

/** Placeholders inside a conditional URL (e.g. `patient=urn:uuid:...`) become the ids they were given. */
export function substitute(url: string, placeholders: Map<string, string>): string {
  return url.replace(/urn:(?:uuid|oid):[A-Za-z0-9.\-]+/g, (m) => placeholders.get(m) ?? m)
}
