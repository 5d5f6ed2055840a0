// Referential integrity on write (HAPI's enforce_referential_integrity_on_write, on by default): a
// reference to a local resource that does not exist is a 400 HAPI-1094 naming the element.
// https://hl7.org/fhir/R4/references.html
import { AppError } from '../errors'
import { findReferences, localTarget } from './references'
import type { HookCtes, WriteHook } from './repo/repo'

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

/**
 * The write hook: every version written (create, update, patch, transaction) is checked inside its own
 * write statement (fhir_require_references raises FH094, undoing the statement). The error names the
 * resource that holds the reference (`details.owner`, Type/id) so a transaction can name its entry.
 */
export function referentialIntegrityHook(): WriteHook {
  return async (w, written): Promise<HookCtes | undefined> => {
    if (!w.checkReferences) return undefined
    // Targets written by the same write (in this statement or another one of it) need no check.
    const writtenKeys = w.writing.size > 0 ? w.writing : new Set(written.map((v) => `${v.type}/${v.id}`))
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
    const sql = w.tx
    return {
      ctes: sql`refcheck as (select fhir_require_references(${list.map((x) => x.type)}::text[], ${list.map((x) => x.id)}::text[]) as ok)`,
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
}
