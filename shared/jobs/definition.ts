// A job is declared once: queue name, payload schema and options. The API enqueues by definition;
// workers/registry.ts is the one place a definition meets its processor.
import type { TSchema, Static } from '@sinclair/typebox'
import type { JobsOptions } from 'bullmq'

export interface JobDefinition<S extends TSchema = TSchema> {
  name: string
  payload: S
  options: JobsOptions
}

export type PayloadOf<D> = D extends JobDefinition<infer S> ? Static<S> : never

export function defineJob<S extends TSchema>(name: string, payload: S, options: JobsOptions = {}): JobDefinition<S> {
  return { name, payload, options: { removeOnComplete: 1000, removeOnFail: 5000, ...options } }
}
