// The scheduled purge of Bulk Data files: jobs that ended more than BULK_FILE_TTL_HOURS ago, or were
// deleted, lose their files (bulk-job.ts purgeBulkFiles).
import { Type } from '@sinclair/typebox'
import { defineJob } from '../jobs/definition'

export const BulkPurgeJob = defineJob('bulk-purge', Type.Object({}), { removeOnComplete: 10, removeOnFail: 100 })
