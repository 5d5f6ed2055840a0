// Referential integrity on write (HAPI's enforce_referential_integrity_on_write, on by default): a
// reference to a local resource that does not exist is a 400 HAPI-1094 naming the element.
// https://hl7.org/fhir/R4/references.html
import type { Sql, TxSql } from '../db/client'
import { AppError } from '../errors'
import { findReferences, localTarget } from './bundle/references'
import type { HookCtes, WriteHook } from './repo/repo'

interface MissingReference<T> {
  type: string
  id: string
  path: string
  owner: T
}

/**
 * The first local reference of `items` whose target neither exists (current, not deleted) nor is in
 * `written` (Type/id created by the same write), with the item it came from. One query for all.
 */
async function firstMissingReference<T>(sql: Sql | TxSql, items: { resource: any; owner: T }[], written: ReadonlySet<string> = new Set()): Promise<MissingReference<T> | undefined> {
  const wanted = new Map<string, MissingReference<T>>()
  for (const { resource, owner } of items) {
    for (const ref of findReferences(resource)) {
      const t = localTarget(ref.value)
      if (!t) continue
      const key = `${t.type}/${t.id}`
      if (!written.has(key) && !wanted.has(key)) wanted.set(key, { ...t, path: ref.path, owner })
    }
  }
  if (wanted.size === 0) return undefined
  const list = [...wanted.values()]
  const found = await (sql as Sql)<{ k: string }[]>`
    select r.res_type || '/' || r.id as k from resource r
    join unnest(${list.map((x) => x.type)}::text[], ${list.map((x) => x.id)}::text[]) as t(type, id) on r.res_type = t.type and r.id = t.id
    where not r.deleted`
  const present = new Set(found.map((f) => f.k))
  return list.find((x) => !present.has(`${x.type}/${x.id}`))
}

function missingReferenceError(m: { type: string; id: string; path: string }): AppError {
  return new AppError('invalid', `HAPI-1094: Resource ${m.type}/${m.id} not found, specified in path: ${m.path}`)
}

/**
 * The write hook: every version written (create, update, patch, transaction) is checked; the error names
 * the resource that holds the reference (`details.owner`, Type/id) so a transaction can name its entry.
 */
export function referentialIntegrityHook(): WriteHook {
  return async (w, written): Promise<HookCtes | undefined> => {
    const items = written.filter((v) => v.resource).map((v) => ({ resource: v.resource, owner: `${v.type}/${v.id}` }))
    const missing = await firstMissingReference(w.tx, items, new Set(written.map((v) => `${v.type}/${v.id}`)))
    if (missing) {
      const err = missingReferenceError(missing)
      err.details.owner = missing.owner
      throw err
    }
    return undefined
  }
}
