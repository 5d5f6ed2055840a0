// Physical removal of resource versions ($expunge): history rows, tombstones, and every row a removed
// resource owns. A table owns rows of a resource when it has a `rid` column (the search indexes, the
// reindex queue, the terminology store...); the tables are found in the catalog at each call, so a new
// table keyed by rid is covered without a change here. Work is done in batches of at most BATCH
// versions, one database transaction each: a huge expunge never holds one giant transaction, and a
// batch is all or nothing. https://hapifhir.io/hapi-fhir/docs/server_jpa/configuration.html (expunge)
import type { Sql, TxSql } from '../../db/client'

export const BATCH = 800

/** What to expunge: everything of one type, one resource (by rid), or one version of it. */
export interface ExpungeScope {
  type?: string
  rid?: string
  version?: number
}

export interface ExpungeOptions {
  /** At most this many versions in this call (HAPI's `limit`, default 1000). */
  limit: number
  /** Every version of resources whose current version is a deletion, and the tombstone itself. */
  deletedResources: boolean
  /** Every non-current version. */
  previousVersions: boolean
}

export interface ExpungeOutcome {
  /** Versions removed (history rows and tombstones). */
  count: number
  /** Types of which current rows were removed (caches of those types may need a reload). */
  removedTypes: string[]
}

/**
 * Called after each committed batch with the versions removed so far. It may throw to stop the work
 * between batches (what is committed stays committed).
 */
export type OnProgress = (done: number) => void | Promise<void>

interface OwnedTable {
  name: string
  /** A nullable rid: the table also has rows no resource owns (e.g. built-in terminology). */
  shared: boolean
}

/** The tables, other than resource and resource_history, with rows owned by a resource's rid. */
export async function ownedTables(sql: Sql | TxSql): Promise<OwnedTable[]> {
  const rows = await sql<{ name: string; nullable: boolean }[]>`
    select c.table_name as name, c.is_nullable = 'YES' as nullable
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and c.column_name = 'rid' and t.table_type = 'BASE TABLE'
      and c.table_name not in ('resource', 'resource_history')
    order by 1`
  return rows.map((r) => ({ name: r.name, shared: r.nullable }))
}

export async function expunge(sql: Sql, scope: ExpungeScope, options: ExpungeOptions, onProgress?: OnProgress): Promise<ExpungeOutcome> {
  const tables = await ownedTables(sql)
  const removedTypes = new Set<string>()
  if (scope.version !== undefined) {
    const count = await expungeVersion(sql, scope.rid as string, scope.version, options)
    if (count > 0) await onProgress?.(count)
    return { count, removedTypes: [] }
  }
  let count = 0
  const budget = () => Math.min(BATCH, options.limit - count)
  if (options.deletedResources) {
    let after = '0'
    while (budget() > 0) {
      const batch = await sql.begin((tx) => expungeDeletedBatch(tx, scope, after, budget(), tables))
      if (batch.count === 0) break
      count += batch.count
      after = batch.after
      for (const t of batch.types) removedTypes.add(t)
      await onProgress?.(count)
    }
  }
  if (options.previousVersions) {
    let after: [string, number] = ['0', 0]
    while (budget() > 0) {
      const batch = await sql.begin((tx) => expungePreviousBatch(tx, scope, after, budget()))
      if (batch.count === 0) break
      count += batch.count
      after = batch.after
      await onProgress?.(count)
    }
  }
  return { count, removedTypes: [...removedTypes].sort() }
}

/**
 * One batch of deleted resources, in rid order after `after`: their history rows (oldest first), then
 * the tombstone and the owned rows once no history is left. The tombstones are locked, and a resource
 * written again meanwhile (no longer deleted) is skipped.
 */
async function expungeDeletedBatch(tx: TxSql, scope: ExpungeScope, after: string, budget: number, tables: OwnedTable[]) {
  const filter = tx`${scope.type ? tx`and r.res_type = ${scope.type}` : tx``} ${scope.rid ? tx`and r.rid = ${scope.rid}` : tx``}`
  const candidates = await tx<{ rid: string; res_type: string; versions: number }[]>`
    select r.rid::text, r.res_type, (select count(*)::int from resource_history h where h.rid = r.rid) as versions
    from resource r
    where r.deleted and r.rid > ${after} ${filter}
    order by r.rid limit ${budget}
    for update of r`
  let left = budget
  let count = 0
  let next = after
  const whole: string[] = []
  const types = new Set<string>()
  for (const c of candidates) {
    if (left <= 0) break
    if (c.versions + 1 <= left) {
      whole.push(c.rid)
      types.add(c.res_type)
      left -= c.versions + 1
      next = c.rid
      continue
    }
    // Not room for all of it: the oldest versions now, the rest (and the tombstone) in a later call.
    const [part] = await tx<{ n: number }[]>`
      with d as (delete from resource_history h using (
        select rid, version from resource_history where rid = ${c.rid} order by version limit ${left}) p
        where h.rid = p.rid and h.version = p.version returning 1)
      select count(*)::int as n from d`
    count += part.n
    left = 0
  }
  if (whole.length > 0) {
    const [hist] = await tx<{ n: number }[]>`
      with d as (delete from resource_history where rid = any(${whole}::bigint[]) returning 1) select count(*)::int as n from d`
    await deleteOwnedRows(tx, tables, whole)
    const [cur] = await tx<{ n: number }[]>`
      with d as (delete from resource where rid = any(${whole}::bigint[]) returning 1) select count(*)::int as n from d`
    count += hist.n + cur.n
  }
  return { count, after: next, types: [...types] }
}

/** One batch of non-current versions, in (rid, version) order after `after`. */
async function expungePreviousBatch(tx: TxSql, scope: ExpungeScope, after: [string, number], budget: number) {
  const filter = tx`${scope.type ? tx`and res_type = ${scope.type}` : tx``} ${scope.rid ? tx`and rid = ${scope.rid}` : tx``}`
  const [last] = await tx<{ n: number; rid: string; version: number }[]>`
    with p as (
      select rid, version from resource_history
      where (rid, version) > (${after[0]}::bigint, ${after[1]}::int) ${filter}
      order by rid, version limit ${budget}),
    d as (delete from resource_history h using p where h.rid = p.rid and h.version = p.version returning 1)
    select (select count(*)::int from d) as n, l.rid::text, l.version
    from (select rid, version from p order by rid desc, version desc limit 1) l`
  if (!last) return { count: 0, after }
  return { count: last.n, after: [last.rid, last.version] as [string, number] }
}

/**
 * One historical version (never the current one: the caller answers 412 for it), removed when the
 * options cover it: any previous version, or any version of a deleted resource.
 */
async function expungeVersion(sql: Sql, rid: string, version: number, options: ExpungeOptions): Promise<number> {
  if (!options.previousVersions && !options.deletedResources) return 0
  const [{ n }] = await sql<{ n: number }[]>`
    with d as (
      delete from resource_history h where h.rid = ${rid} and h.version = ${version}
        and (${options.previousVersions} or exists (select 1 from resource r where r.rid = h.rid and r.deleted))
      returning 1)
    select count(*)::int as n from d`
  return n
}

async function deleteOwnedRows(tx: TxSql, tables: OwnedTable[], rids: string[]): Promise<void> {
  for (const t of tables) await tx`delete from ${tx(t.name)} where rid = any(${rids}::bigint[])`
}

/**
 * expungeEverything: every resource, version and owned row, in one short transaction. Tables whose rows
 * all belong to resources are truncated; a table that also holds rows no resource owns (a nullable rid)
 * loses only its owned rows. `resource` itself is truncated unless a table that is kept references it
 * by a foreign key (PostgreSQL refuses that TRUNCATE); its rows are deleted then.
 */
export async function expungeEverything(sql: Sql, onProgress?: OnProgress): Promise<ExpungeOutcome> {
  const outcome = await sql.begin(async (tx) => {
    await tx`lock table resource, resource_history in access exclusive mode`
    const tables = await ownedTables(tx)
    const [{ n, types }] = await tx<{ n: string; types: string[] }[]>`
      select ((select count(*) from resource) + (select count(*) from resource_history))::text as n,
             array(select res_type from resource_count group by res_type having sum(n) > 0 order by 1) as types`
    const wholly = tables.filter((t) => !t.shared).map((t) => t.name)
    const referencing = await tx<{ name: string }[]>`
      select c.relname as name from pg_constraint k join pg_class c on c.oid = k.conrelid
      where k.contype = 'f' and k.confrelid = 'resource'::regclass`
    const truncateResource = referencing.every((r) => wholly.includes(r.name))
    for (const t of tables) if (t.shared) await tx`delete from ${tx(t.name)} where rid is not null`
    await tx`truncate ${tx(['resource_history', ...wholly, ...(truncateResource ? ['resource'] : [])])}`
    if (!truncateResource) await tx`delete from resource`
    return { count: Number(n), removedTypes: types }
  })
  await onProgress?.(outcome.count)
  return outcome
}
