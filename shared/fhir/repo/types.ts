// Shapes of stored versions as the repository returns and writes them.

export interface StoredVersion {
  /** Internal row id (bigint as string); the id of index rows. */
  rid: string
  type: string
  id: string
  version: number
  lastUpdated: Date
  deleted: boolean
  /** The resource JSON as stored and served; null for a deletion. */
  content: string | null
}

/** A version about to be written: its content already carries id and meta; `resource` is the parsed
 *  form (absent for deletions), for index extraction. A new resource's rid may be empty: the
 *  repository assigns one as it writes. */
export interface NewVersion extends StoredVersion {
  resource?: any
  /** The `reference` values of `resource` with where they are, when the writer has already walked it for
   *  them (a transaction rewriting placeholders): spares the referential-integrity check its own walk. */
  references?: { value: string; path: string }[]
}

/** A row of `resource` or `resource_history` as the queries select it. */
export interface ResourceRow {
  rid: string
  res_type: string
  id: string
  version: number
  last_updated: Date
  deleted: boolean
  content: string | null
}

export function storedFromRow(r: ResourceRow): StoredVersion {
  return { rid: r.rid, type: r.res_type, id: r.id, version: r.version, lastUpdated: r.last_updated, deleted: r.deleted, content: r.content }
}
