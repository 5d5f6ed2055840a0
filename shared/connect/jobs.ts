// Jobs of the connect flow, declared once: pulling one connection's records, and the periodic re-sync
// that enqueues a pull for every active connection not pulled recently.
import { Type } from '@sinclair/typebox'
import { defineJob } from '../jobs/definition'

export const ConnectSyncJob = defineJob('connect-sync', Type.Object({ connectionId: Type.String({ minLength: 1 }) }), {
  removeOnComplete: 1000,
  removeOnFail: 1000,
})

export const ConnectResyncJob = defineJob('connect-resync', Type.Object({}), { removeOnComplete: 100, removeOnFail: 100 })
