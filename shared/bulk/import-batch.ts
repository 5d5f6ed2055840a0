// One batch of $import lines: each line read and validated on its own (a bad line becomes an
// OperationOutcome naming its line, the rest go on), then the valid resources written together as HAPI's
// bulk import writes them, each an update-as-create by its id: a new version when its content differs
// from the current one, none when it is the same (so running an import again changes nothing), search
// indexes written in the same statements, without the referential-integrity check (the files come in no
// order). The batch's checkpoint commits with it (`after`).
import type { TxSql } from '../db/client'
import { AppError } from '../errors'
import { parseFhirJsonBody } from '../fhir/format/json'
import { assertValidId } from '../fhir/ids'
import { newVersion, nextVersion } from '../fhir/interactions/store-version'
import { retryOnCreateRace } from '../fhir/interactions/update'
import { errorOutcome, toAppError } from '../fhir/outcome'
import type { Repo } from '../fhir/repo/repo'
import type { PreparedCopy } from '../fhir/repo/write-tx'
import type { NewVersion } from '../fhir/repo/types'
import { assertNotSubsetted } from '../fhir/resource-meta'
import { assertValid } from '../fhir/validate/validate'
import type { NdjsonLine } from './ndjson-lines'

/** A line as read: a resource to write, or the OperationOutcome of why it is not written. */
export type ImportLine = { line: number; resource: any; key: string } | { line: number; outcome: string }

export interface BatchCounts {
  created: number
  updated: number
  unchanged: number
}

const NUMERIC = /^[0-9]+$/
/**
 * The largest purely numeric id a line may have. Such ids are the server's own (an export of this server
 * has them), and the id sequence is moved past the largest imported (writeImportBatch): an id near the end
 * of bigint left it unable to hand out another, and one past it failed its whole batch, every attempt.
 */
const MAX_NUMERIC_ID = BigInt(Number.MAX_SAFE_INTEGER)

/** Parses and validates a line; never throws. */
export function readImportLine(l: NdjsonLine): ImportLine {
  try {
    if (l.text === undefined) throw new AppError('invalid', l.problem ?? 'The line could not be read')
    const resource = parseFhirJsonBody(l.text)
    assertValid(resource, typeof resource?.resourceType === 'string' ? { expectedType: resource.resourceType } : undefined)
    if (typeof resource.id !== 'string') throw new AppError('invalid', 'The resource has no id: a bulk import updates each resource by its id')
    assertValidId(resource.id)
    if (NUMERIC.test(resource.id) && BigInt(resource.id) > MAX_NUMERIC_ID)
      throw new AppError('invalid', `A purely numeric id is at most ${MAX_NUMERIC_ID} (ids of that form are the server's own): ${resource.id}`)
    assertNotSubsetted(resource)
    return { line: l.number, resource, key: `${resource.resourceType}/${resource.id}` }
  } catch (err) {
    return { line: l.number, outcome: lineOutcome(l.number, err) }
  }
}

/** The OperationOutcome of a line that was not stored, its line number in each issue's location. */
export function lineOutcome(line: number, err: unknown): string {
  const e = err instanceof AppError ? err : toAppError(err)
  const outcome = errorOutcome(e)
  outcome.issue = outcome.issue.slice(0, 20).map((i: any) => ({ ...i, diagnostics: `Line ${line}: ${i.diagnostics}`, location: [`Line[${line}]`] }))
  return JSON.stringify(outcome)
}

/**
 * The batch's resources as new ones (version 1), their rows built for COPY before its transaction: what
 * the transaction sends when none of them exists yet (an import into an empty database), so that the
 * worker's CPU work for a batch is done before the database's starts, not between its statements.
 * Undefined when the repository cannot COPY.
 */
export function prepareNewBatch(repo: Repo, items: { resource: any; key: string }[]): Promise<PreparedCopy | undefined> {
  const now = new Date()
  return repo.prepareCopy(items.map((i) => newVersion('', i.resource.resourceType, i.resource.id, 1, i.resource, now)))
}

/**
 * Writes the batch's resources in one transaction (keys unique within it), then runs `after` in the same
 * transaction; `locked` is called once the batch's current versions are locked. `prepared`
 * (prepareNewBatch) is written when none of them exists; otherwise each is planned against its current
 * version here. Purely numeric ids are accepted (an export of this server has them) and the id sequence is
 * moved past them, so that ids the server assigns later never meet them.
 */
export async function writeImportBatch(
  repo: Repo,
  items: { resource: any; key: string }[],
  locked: () => void,
  after: (tx: TxSql, counts: BatchCounts) => Promise<void>,
  prepared?: PreparedCopy,
): Promise<BatchCounts> {
  return retryOnCreateRace(() =>
    repo.transaction(
      async (w) => {
        // The batch commits with its checkpoint: a commit lost with the database is a batch done again.
        // No sequential scan: a table filling up has no statistics yet, and the planner read all of
        // `resource` to lock a batch's 500 keys (147 scans, 9.2 million rows, on Synthea x10 into an
        // empty database) where 500 probes of its (res_type, id) key do.
        await w.tx`select set_config('synchronous_commit', 'off', true), set_config('enable_seqscan', 'off', true)`
        const current = await w.lock(items.map((i) => ({ type: i.resource.resourceType, id: i.resource.id })))
        locked()
        const counts: BatchCounts = { created: 0, updated: 0, unchanged: 0 }
        let numeric = -1n
        for (const item of items) {
          const r = item.resource
          if (!current.has(item.key) && NUMERIC.test(r.id) && BigInt(r.id) > numeric) numeric = BigInt(r.id)
        }
        if (numeric >= 0n) {
          await w.tx`select setval('resource_rid_seq', greatest(last_value, ${numeric.toString()}::bigint)) from resource_rid_seq`
          repo.ids.skipPast(numeric)
        }
        if (prepared && current.size === 0 && prepared.versions.length === items.length) {
          await w.copyPrepared(prepared)
          counts.created = items.length
        } else {
          const versions: NewVersion[] = []
          const supersedes = new Set<string>()
          const now = new Date()
          for (const item of items) {
            const r = item.resource
            const cur = current.get(item.key)
            // The update an HTTP PUT plans, without its request checks (the line's were made on reading);
            // a new resource's rid is given by the write.
            const plan = nextVersion(r.resourceType, r.id, r, cur, '', now)
            if (plan.outcome === 'unchanged') {
              counts.unchanged++
              continue
            }
            counts[plan.outcome]++
            versions.push(plan.version)
            if (plan.replaces) supersedes.add(plan.version.rid)
          }
          await w.write(versions, supersedes)
        }
        await after(w.tx, counts)
        return counts
      },
      { checkReferences: false, statementVersions: 500, copyNew: true },
    ),
  )
}
