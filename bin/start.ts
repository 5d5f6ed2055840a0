// All-in-one start for a single machine: an API node and the workers in one process, on one runtime
// (one database pool, or one embedded database).
import { startApi } from '../api/main'
import { configOrExit, onShutdown, openRuntime } from '../shared/runtime'
import { startWorkers } from '../workers/main'

const config = configOrExit()
const rt = await openRuntime(config)
const workers = await startWorkers(config, rt)
const api = await startApi(config, rt, workers.inProcess)
onShutdown(async () => {
  await api.stop()
  await workers.stop()
  await rt.close()
})
