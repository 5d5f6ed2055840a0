// What a job reports while it runs, and the status any node can read back.

export interface JobProgress {
  done: number
  total: number
}

export type JobState = 'queued' | 'running' | 'completed' | 'failed'

export interface JobStatus {
  id: string
  state: JobState
  progress?: JobProgress
  /** The job's result when completed (for a bundle: the FhirResponse). */
  result?: unknown
  /** The error when failed: status and OperationOutcome-ready message. */
  error?: { status: number; message: string; outcome?: unknown }
}
