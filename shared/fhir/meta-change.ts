// Adding and removing tags, security labels and profiles of a stored meta ($meta-add, $meta-delete),
// and the Meta the $meta operations answer. Codings match on system and code; the lists stay sorted as
// the server stores them (resource-meta.ts). https://hl7.org/fhir/R4/resource-operation-meta-add.html
import type { StoredVersion } from './repo/types'

type Coding = { system?: string; code?: string; display?: string; [k: string]: unknown }

export interface Meta {
  versionId?: string
  lastUpdated?: string
  profile?: string[]
  security?: Coding[]
  tag?: Coding[]
  [k: string]: unknown
}

const codingKey = (c: Coding) => `${c.system ?? ''}|${c.code ?? ''}`
const byKey = (a: Coding, b: Coding) => (codingKey(a) < codingKey(b) ? -1 : codingKey(a) > codingKey(b) ? 1 : 0)

const codings = (v: unknown): Coding[] => (Array.isArray(v) ? v.filter((c) => c && typeof c === 'object') : [])
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [])

/** `list` with `more` added: a coding already there (same system and code) is kept as it is. */
function addCodings(list: unknown, more: unknown): Coding[] {
  const out = new Map<string, Coding>()
  for (const c of codings(list)) out.set(codingKey(c), c)
  for (const c of codings(more)) if (!out.has(codingKey(c))) out.set(codingKey(c), c)
  return [...out.values()].sort(byKey)
}

function deleteCodings(list: unknown, less: unknown): Coding[] {
  const drop = new Set(codings(less).map(codingKey))
  return codings(list).filter((c) => !drop.has(codingKey(c)))
}

/** `meta` with its profile, security and tag lists replaced (empty lists left out), other keys kept in place. */
function withLists(meta: Meta, lists: Pick<Meta, 'profile' | 'security' | 'tag'>): Meta {
  const out: Meta = {}
  for (const [k, v] of Object.entries(meta)) if (k !== 'profile' && k !== 'security' && k !== 'tag') out[k] = v
  for (const k of ['profile', 'security', 'tag'] as const) if ((lists[k]?.length ?? 0) > 0) out[k] = lists[k] as any
  return out
}

export function addToMeta(meta: Meta, add: Meta): Meta {
  return withLists(meta, {
    profile: [...new Set([...strings(meta.profile), ...strings(add.profile)])].sort(),
    security: addCodings(meta.security, add.security),
    tag: addCodings(meta.tag, add.tag),
  })
}

export function deleteFromMeta(meta: Meta, remove: Meta): Meta {
  const drop = new Set(strings(remove.profile))
  return withLists(meta, {
    profile: strings(meta.profile).filter((p) => !drop.has(p)),
    security: deleteCodings(meta.security, remove.security),
    tag: deleteCodings(meta.tag, remove.tag),
  })
}

/** What $meta answers for a version: versionId, lastUpdated, then its profiles, security labels and tags. */
export function metaAnswer(meta: Meta | undefined, stored: StoredVersion): Meta {
  const out: Meta = { versionId: String(stored.version), lastUpdated: stored.lastUpdated.toISOString() }
  if (strings(meta?.profile).length > 0) out.profile = strings(meta?.profile)
  if (codings(meta?.security).length > 0) out.security = codings(meta?.security)
  if (codings(meta?.tag).length > 0) out.tag = codings(meta?.tag)
  return out
}
