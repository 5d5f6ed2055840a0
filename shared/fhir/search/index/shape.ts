// A resource's search shape: which parameters give it index rows, kept in its full-text row
// (idx_fulltext.shape, one row per live resource, keyed by (shape, rid): two bigints, the narrowest key
// that lists a shape's rids in order; its layout in ../shape-key.ts). The resources that lack a
// parameter are then those of the few shapes without it: query/absent.ts finds them through the shapes
// of the type, one resource checked per shape, instead of reading every resource of the type less the
// parameter's rows (issue 23: `Observation?status:not=final` and `:missing=true` on common parameters
// read all 63,220 Observations of Synthea x10). A column of a row written anyway: an index entry per resource.
import { shapeKey } from '../shape-key'
import type { IndexRows } from './extract'

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
  return shapeKey(resourceType, BigInt(Bun.hash(key)))
}
