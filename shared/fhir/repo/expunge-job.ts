// $expunge as an admin job: the batches run on a worker with their progress visible at
// /admin/jobs/{id}. Each batch commits on its own, so a job resumed after a crash continues with what
// is left of its limit: what is gone stays gone, nothing is removed twice.
import type { AdminJobKind } from '../../jobs/admin-job'
import { expunge, expungeEverything, type ExpungeOptions, type ExpungeScope } from './expunge'

export interface ExpungeParams {
  everything: boolean
  scope: ExpungeScope
  options: ExpungeOptions
}

export const ExpungeJobKind: AdminJobKind<ExpungeParams> = {
  kind: 'expunge',
  async run(run, p) {
    const before = run.processed
    const progress = (done: number) => run.checkpoint({ cursor: null, processed: before + done })
    const outcome = p.everything
      ? await expungeEverything(run.sql, progress)
      : await expunge(run.sql, p.scope, { ...p.options, limit: Math.max(0, p.options.limit - before) }, progress)
    // Caches of the removed types (custom search parameters, terminology) reload on every node.
    await run.repo.removed(outcome.removedTypes)
    return { count: before + outcome.count }
  },
}
