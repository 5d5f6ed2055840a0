// The one place a job definition meets its processor. Later work (transaction bundles, reindex,
// expunge, sync) registers here.
import type { JobDefinition } from '../shared/jobs/definition'
import type { Runtime } from '../shared/runtime'

export interface Registration {
  definition: JobDefinition
  concurrency: number
  process: (data: unknown, progress: (p: number | object) => Promise<void>) => Promise<unknown>
}

export function registrations(_rt: Runtime): Registration[] {
  return []
}
