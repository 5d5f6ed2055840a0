// The terminology rebuild as an admin job (kind `reindex-terminology`): one atomic rebuild, so a
// retried or resumed attempt simply starts over; progress is reported per page of stored resources,
// and a cancel rolls the whole rebuild back.
import type { AdminJobKind } from '../../jobs/admin-job'
import { rebuildTerminology, type RebuildResult } from './rebuild'

export const TERMINOLOGY_JOB_KIND = 'reindex-terminology'

export const TerminologyRebuildJobKind: AdminJobKind<Record<string, never>> = {
  kind: TERMINOLOGY_JOB_KIND,
  run: (run): Promise<RebuildResult> => rebuildTerminology(run.sql, ({ processed, total }, tx) => run.checkpoint({ cursor: undefined, processed, total }, tx)),
}
