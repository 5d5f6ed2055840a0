// The $reindex job: every current resource selected by the job's URLs (all resources when none) gets
// its index rows recomputed by the repository's index writer, in keyset batches by rid. Each batch
// commits with its checkpoint, so a job resumed after a crash continues exactly where the last ended.
import type { Fragment } from '../../db/fragments'
import { AppError } from '../../errors'
import type { AdminJobKind } from '../../jobs/admin-job'
import { isResourceType } from '../definitions/resource-types'
import { parseSearch } from '../search/query/parse'
import { SearchQueries } from '../search/query/queries'
import type { CurrentRow } from '../repo/current-pages'

export interface ReindexParams {
  /** Partial search URLs (`Patient?`, `Observation?status=final`); empty means every resource. */
  urls: string[]
  reindexSearchParameters: 'ALL' | 'NONE'
  optimizeStorage: 'NONE' | 'CURRENT_VERSION' | 'ALL_VERSIONS'
  optimisticLock: boolean
  /** Base URL for reference criteria in the URLs. */
  baseUrl: string
  /** Resources per batch (one transaction and checkpoint each). */
  batchSize?: number
}

interface Cursor {
  /** Index of the URL in progress. */
  u: number
  /** Last rid done in it. */
  after: string
}

export const DEFAULT_BATCH = 1000

/** Checks a $reindex URL (400 for an unknown type or parameter) and answers its selection (undefined: every current resource). */
export function reindexSelection(search: SearchQueries, url: string | undefined, baseUrl: string): Fragment | undefined {
  if (url === undefined) return undefined
  const [type, query = ''] = url.split('?', 2) as [string, string?]
  if (!isResourceType(type)) throw new AppError('invalid', `Unknown resource type "${type}" in $reindex url "${url}"`)
  const q = parseSearch([type], new URLSearchParams(query), { defaultCount: 1, maxCount: 1 })
  return search.where(q, baseUrl)
}

export const ReindexJobKind: AdminJobKind<ReindexParams> = {
  kind: 'reindex',
  async run(run, p) {
    const search = new SearchQueries(() => run.sql)
    const selections = p.urls.length > 0 ? p.urls.map((u) => reindexSelection(search, u, p.baseUrl)) : [reindexSelection(search, undefined, p.baseUrl)]
    if (p.reindexSearchParameters === 'NONE') {
      // Storage is always inline here: optimizeStorage has nothing to move, and no index changes.
      await run.checkpoint({ cursor: null, processed: 0, total: 0 })
      return { reindexed: 0 }
    }
    let cursor = (run.cursor as Cursor | undefined) ?? { u: 0, after: '0' }
    let processed = run.processed
    const { repo } = run
    if (run.cursor === undefined) {
      let total = 0
      for (const where of selections) total += await repo.countCurrent(where)
      await run.checkpoint({ cursor, processed, total })
    }
    for (let u = cursor.u; u < selections.length; u++) {
      const where = selections[u]
      const fetch = (after: string) => repo.currentPage(where, after, p.batchSize ?? DEFAULT_BATCH)
      // A pipeline: while the database writes batch k, this thread extracts batch k+1.
      let rows = await fetch(u === cursor.u ? cursor.after : '0')
      let prepared = repo.prepareReindex(rows)
      while (rows.length > 0) {
        const after = (rows[rows.length - 1] as CurrentRow).rid
        const batch = prepared
        const count = rows.length
        const writing = repo.transaction(async (w) => {
          await w.reindexBatch(batch)
          cursor = { u, after }
          await run.checkpoint({ cursor, processed: processed + count }, w.tx)
        })
        // Keep the write's failure for the await below (not an unhandled rejection meanwhile).
        writing.catch(() => {})
        rows = await fetch(after)
        prepared = repo.prepareReindex(rows)
        await writing
        processed += count
      }
    }
    return { reindexed: processed }
  },
}
