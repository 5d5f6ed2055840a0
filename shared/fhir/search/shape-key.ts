// The layout of a search shape's key (idx_fulltext.shape): the resource type's number (23 bits of the md5
// of its name, as migration 0027 computes it) then 40 bits of a hash of the shape's parameters, so that
// the shapes of a type are one range of the key. Written by index/shape.ts, read by query/absent.ts.
import { createHash } from 'node:crypto'

const HASH_BITS = 40n
const typeNumbers = new Map<string, bigint>()

/** The key of a shape of `resourceType` whose parameters hash to `hash` (its low 40 bits are kept). */
export function shapeKey(resourceType: string, hash: bigint): string {
  return ((typeNumber(resourceType) << HASH_BITS) | (hash & ((1n << HASH_BITS) - 1n))).toString()
}

/** The range [lo, hi) of the shapes of a resource type. */
export function shapeRange(resourceType: string): { lo: string; hi: string } {
  const t = typeNumber(resourceType)
  return { lo: (t << HASH_BITS).toString(), hi: ((t + 1n) << HASH_BITS).toString() }
}

function typeNumber(resourceType: string): bigint {
  let n = typeNumbers.get(resourceType)
  if (n === undefined) {
    n = BigInt(Number.parseInt(createHash('md5').update(resourceType).digest('hex').slice(0, 6), 16) >> 1)
    typeNumbers.set(resourceType, n)
  }
  return n
}
