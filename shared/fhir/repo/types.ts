// Shapes of stored versions as the repository returns them.

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

/** A version about to be written: the content already carries id and meta. */
export interface NewVersion {
  rid: string
  type: string
  id: string
  version: number
  lastUpdated: Date
  deleted: boolean
  content: string | null
  /** The parsed resource (absent for deletions), for index extraction. */
  resource?: any
}
