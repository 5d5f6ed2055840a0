// Rewriting the stored content of one version in place, without a new version ($meta-add and
// $meta-delete change only tags, security labels and profiles). The version is locked first: the current
// row in `resource`, or an earlier one in `resource_history` (whose row lock also holds the resource
// row still, so a concurrent write cannot move the current version away meanwhile).
import type { TxSql } from '../../db/client'
import { type ResourceRow, type StoredVersion, storedFromRow } from './types'

export interface LockedVersion {
  stored: StoredVersion
  /** The current version (in `resource`), whose index rows follow its content. */
  current: boolean
}

export type LockResult = LockedVersion | 'unknown-resource' | 'unknown-version'

/** The current version when `version` is absent. */
export async function lockVersion(tx: TxSql, type: string, id: string, version?: number): Promise<LockResult> {
  const [cur] = await tx<ResourceRow[]>`
    select rid::text, res_type, id, version, last_updated, deleted, content
    from resource where res_type = ${type} and id = ${id} for update`
  if (!cur) return 'unknown-resource'
  if (version === undefined || version === cur.version) return { stored: storedFromRow(cur), current: true }
  const [old] = await tx<ResourceRow[]>`
    select rid::text, res_type, id, version, last_updated, deleted, content
    from resource_history where rid = ${cur.rid} and version = ${version} for update`
  return old ? { stored: storedFromRow(old), current: false } : 'unknown-version'
}

export async function replaceContent(tx: TxSql, locked: LockedVersion, content: string): Promise<void> {
  const { rid, version } = locked.stored
  if (locked.current) await tx`update resource set content = ${content} where rid = ${rid} and version = ${version}`
  else await tx`update resource_history set content = ${content} where rid = ${rid} and version = ${version}`
}
