// A resource's search shape: which parameters give it index rows, kept in its full-text row
// (idx_fulltext.shape, one row per live resource, keyed by (shape, rid): two bigints, the narrowest key
// that lists a shape's rids in order). A shape is its type's number (23 bits of the md5 of its name, as
// migration 0027 computes it) then 40 bits of a hash of its (parameter type, code) pairs: the shapes
// of a type are one range of the key. The resources that lack a parameter are then those of the few shapes
// without it: query/absent.ts finds them through the shapes of the type, one resource checked per
// shape, instead of reading every resource of the type less the parameter's rows (issue 23:
// `Observation?status:not=final` and `:missing=true` on common parameters read all 63,220 Observations
// of Synthea x10). A column of a row written anyway, not a row of its own: an index entry per resource.
import { createHash } from 'node:crypto'
import type { IndexRows } from './extract'

const HASH_BITS = 40n
const typeNumbers = new Map<string, bigint>()

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

/**
 * The shape of one resource's rows. Each parameter's rows are contiguous and in the registry's order
 * (extract.ts), so the pairs need no sort: equal sets give equal keys while the registry stands (a custom
 * SearchParameter may reorder them: a new key for the same set splits a shape, one more shape to read).
 */
export function shapeOf(resourceType: string, rows: IndexRows): string {
  let key = ''
  const byType = rows as unknown as Record<string, { code: string }[]>
  for (const type in byType) {
    let last = ''
    for (const row of byType[type]) {
      if (row.code === last) continue
      last = row.code
      key += `${type}.${last},`
    }
  }
  return ((typeNumber(resourceType) << HASH_BITS) | (BigInt(Bun.hash(key)) & ((1n << HASH_BITS) - 1n))).toString()
}
