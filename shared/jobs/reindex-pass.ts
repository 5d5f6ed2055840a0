// The scheduled reindexing pass (HAPI runs its legacy pass every 10 s): consumes what
// $mark-all-resources-for-reindexing queued. Cheap when nothing is pending.
import { Type } from '@sinclair/typebox'
import { defineJob } from './definition'

export const ReindexPassJob = defineJob('reindex-pass', Type.Object({}), { removeOnComplete: 10, removeOnFail: 100 })
