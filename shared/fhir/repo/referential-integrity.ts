// Referential integrity: on write (HAPI's enforce_referential_integrity_on_write, on by default), a
// reference to a local resource that does not exist is a 400 HAPI-1094 naming the element; on delete,
// the current resources that reference the target are what keeps it from being deleted (HAPI's
// DeleteConflictService; the 409 is built by interactions/delete.ts). https://hl7.org/fhir/R4/references.html
import type { TxSql } from '../../db/client'
import { AppError } from '../../errors'
import { findReferences, localTarget } from '../references'
import type { IntegrityChecker, Referrer, StatementCheck } from './collaborators'
import type { NewVersion } from './types'

interface LocalReference {
  type: string
  id: string
  /** Where the reference is, e.g. `Observation.subject`. */
  path: string
  /** The resource holding it, Type/id. */
  owner: string
}

function missingReferenceError(m: { type: string; id: string; path: string }): AppError {
  return new AppError('invalid', `HAPI-1094: Resource ${m.type}/${m.id} not found, specified in path: ${m.path}`)
}

/** `onWrite`: check the references of every version written (config.enforceReferentialIntegrity). */
export function referentialIntegrity(opts: { onWrite: boolean }): IntegrityChecker {
  return { checkReferences: opts.onWrite ? checkReferences : () => undefined, referrers }
}

/**
 * Every version written (create, update, patch, transaction) is checked inside its own write statement
 * (fhir_require_references raises FH094, undoing the statement). The error names the resource that
 * holds the reference (`details.owner`, Type/id) so a transaction can name its entry.
 */
function checkReferences(tx: TxSql, written: NewVersion[], alsoWritten: ReadonlySet<string>): StatementCheck | undefined {
  // Targets written by the same write (in this statement or another one of it) need no check.
  const writtenKeys = alsoWritten.size > 0 ? alsoWritten : new Set(written.map((v) => `${v.type}/${v.id}`))
  const wanted = new Map<string, LocalReference>()
  for (const v of written) {
    if (!v.resource) continue
    for (const ref of v.references ?? findReferences(v.resource)) {
      const t = localTarget(ref.value)
      if (!t) continue
      const key = `${t.type}/${t.id}`
      if (!writtenKeys.has(key) && !wanted.has(key)) wanted.set(key, { ...t, path: ref.path, owner: `${v.type}/${v.id}` })
    }
  }
  if (wanted.size === 0) return undefined
  const list = [...wanted.values()]
  return {
    ctes: tx`refcheck as (select fhir_require_references(${list.map((x) => x.type)}::text[], ${list.map((x) => x.id)}::text[]) as ok)`,
    check: 'refcheck',
    mapError: (err) => {
      const e = err as { code?: string; detail?: string }
      if (e?.code !== 'FH094') return undefined
      const missing = list[Number(e.detail) - 1]
      if (!missing) return undefined
      const appErr = missingReferenceError(missing)
      appErr.details.owner = missing.owner
      return appErr
    },
  }
}

/**
 * Current, non-deleted resources other than the target itself that reference it. Index rows exist only
 * for current, non-deleted versions, so idx_reference is the whole answer.
 */
async function referrers(tx: TxSql, target: { rid: string; type: string; id: string }, limit: number): Promise<Referrer[]> {
  const rows = await tx<{ res_type: string; id: string; code: string; content: string }[]>`
    select distinct on (s.rid) s.res_type, s.id, i.code, s.content
    from idx_reference i join resource s on s.rid = i.rid
    where i.target_id = ${target.id} and i.target_type = ${target.type}
      and s.rid <> ${target.rid}::bigint and not s.deleted
    order by s.rid, i.code
    limit ${limit}`
  return rows.map((r) => ({ type: r.res_type, id: r.id, code: r.code, content: r.content }))
}
