// Where Bulk Data files live: one interface, served by any API node. A file is a sequence of chunks,
// each written whole by the job before the checkpoint that records it, so that a resumed job writes the
// same chunk again rather than appending twice. PostgreSQL (the cluster form without a shared folder) or
// a folder shared by the nodes (BULK_STORAGE_DIR; the embedded form keeps one beside its database).
import { dirname, join, resolve } from 'node:path'
import type { Config } from '../config'
import type { Sql } from '../db/client'
import type { BulkFileStore } from './file-store-contract'
import { DirFileStore } from './file-store-dir'
import { PgFileStore } from './file-store-pg'

export type { BulkFileStore } from './file-store-contract'

/** The store the configuration names: a folder when set (or embedded), else PostgreSQL. */
export function bulkFileStore(sql: Sql, config: Pick<Config, 'bulk' | 'databaseUrl' | 'dataDir'>): BulkFileStore {
  const dir = config.bulk.storageDir ?? (config.databaseUrl ? undefined : join(dirname(resolve(config.dataDir)), 'bulk-files'))
  return dir ? new DirFileStore(dir) : new PgFileStore(sql)
}
