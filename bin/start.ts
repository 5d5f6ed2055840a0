// All-in-one start for a single machine: an API node and the workers in one process.
import { startApi } from '../api/main'
import { configOrExit, onShutdown } from '../shared/runtime'
import { startWorkers } from '../workers/main'

const config = configOrExit()
const workers = await startWorkers(config)
const api = await startApi(config)
onShutdown(async () => {
  await api.stop()
  await workers.stop()
})
