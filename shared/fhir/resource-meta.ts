// What the server sets on every stored version: id, meta.versionId, meta.lastUpdated, with meta.tag,
// meta.security and meta.profile sorted (HAPI 7.0) and tags/security labels carried over from the
// previous version (HAPI's tags are additive across updates). https://hl7.org/fhir/R4/resource.html#Meta
import { invalid } from '../errors'

const SUBSETTED = { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED' }

type Coding = { system?: string; code?: string; [k: string]: unknown }

const codingKey = (c: Coding) => `${c.system ?? ''}|${c.code ?? ''}`
const byCoding = (a: Coding, b: Coding) => (codingKey(a) < codingKey(b) ? -1 : codingKey(a) > codingKey(b) ? 1 : 0)

function mergeCodings(prev: Coding[] | undefined, next: Coding[] | undefined): Coding[] | undefined {
  if (!prev?.length) {
    // Nothing to carry over (every create): a lone coding is already in order.
    if (!next?.length) return undefined
    if (next.length === 1) return [next[0]]
  }
  const seen = new Map<string, Coding>()
  for (const c of prev ?? []) seen.set(codingKey(c), c)
  for (const c of next ?? []) seen.set(codingKey(c), c)
  return seen.size > 0 ? [...seen.values()].sort(byCoding) : undefined
}

export function isSubsetted(resource: any): boolean {
  return !!resource?.meta?.tag?.some((t: Coding) => t.system === SUBSETTED.system && t.code === SUBSETTED.code)
}

/** 400 HAPI-0556: a subset (_summary, _elements) is never stored. */
export function assertNotSubsetted(resource: any): void {
  if (isSubsetted(resource)) throw invalid('HAPI-0556: Unable to store a resource which has the SUBSETTED tag', `${resource.resourceType}.meta.tag`)
}

export function addSubsettedTag(resource: any): any {
  const meta = { ...(resource.meta ?? {}) }
  meta.tag = [...(meta.tag ?? []).filter((t: Coding) => t.code !== SUBSETTED.code), SUBSETTED]
  return { ...resource, meta }
}

/**
 * The resource as it will be stored: keys ordered resourceType, id, meta, then the rest as sent.
 * `previousMeta` is the meta of the version it replaces, whose tags and security labels are kept.
 */
export function withServerMeta(resource: any, id: string, version: number, lastUpdated: Date, previousMeta?: any): any {
  assertNotSubsetted(resource)
  const clientMeta = resource.meta
  const meta: any = { ...(clientMeta ?? {}) }
  meta.versionId = String(version)
  meta.lastUpdated = lastUpdated.toISOString()
  const tag = mergeCodings(previousMeta?.tag, clientMeta?.tag)
  const security = mergeCodings(previousMeta?.security, clientMeta?.security)
  if (tag) meta.tag = tag
  if (security) meta.security = security
  if (Array.isArray(meta.profile)) meta.profile = [...new Set<string>(meta.profile)].sort()
  const ordered: any = { versionId: meta.versionId, lastUpdated: meta.lastUpdated }
  for (const k in meta) if (k !== 'versionId' && k !== 'lastUpdated') ordered[k] = meta[k]
  // The rest copied straight into the new object (not first into a rest object, then spread), each
  // as an own property as a spread makes it (an assignment to `__proto__` would set the prototype).
  const stored: any = { resourceType: resource.resourceType, id, meta: ordered }
  for (const k in resource) {
    if (k === 'resourceType' || k === 'id' || k === 'meta') continue
    if (k === '__proto__') Object.defineProperty(stored, k, { value: resource[k], enumerable: true, writable: true, configurable: true })
    else stored[k] = resource[k]
  }
  return stored
}

/** Equal content apart from meta.versionId and meta.lastUpdated (an update with no change writes nothing). */
export function sameContent(a: any, b: any): boolean {
  return stableJson(stripVersionMeta(a)) === stableJson(stripVersionMeta(b))
}

function stripVersionMeta(r: any): any {
  if (!r?.meta) return r
  const { versionId, lastUpdated, ...meta } = r.meta
  return { ...r, meta: Object.keys(meta).length ? meta : undefined }
}

function stableJson(v: unknown): string {
  return JSON.stringify(v, (_k, val) =>
    val && typeof val === 'object' && !Array.isArray(val)
      ? Object.fromEntries(
          Object.keys(val)
            .sort()
            .filter((k) => val[k] !== undefined)
            .map((k) => [k, val[k]]),
        )
      : val,
  )
}
