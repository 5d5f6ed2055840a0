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
 *  form (absent for deletions), for index extraction. */
export interface NewVersion extends StoredVersion {
  resource?: any
}
