// A resource found by a search, as a searchset entry needs it: the rows of a page and of its
// _include/_revinclude share this shape (execute.ts, include.ts).
import type { StoredVersion } from '../../repo/types'

/** A resource found by a search: what a searchset entry needs (no version columns to decode). */
export type SearchMatch = Pick<StoredVersion, 'rid' | 'type' | 'id' | 'content'>

export function toMatch(r: any): SearchMatch {
  return { rid: r.rid, type: r.res_type, id: r.id, content: r.content }
}
