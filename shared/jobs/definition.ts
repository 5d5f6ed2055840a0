// A job is declared once: queue name, payload schema and options. The API enqueues by definition;
// workers/registry.ts is the one place a definition meets its processor.
import type { Static, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { JobsOptions } from 'bullmq'
import { AppError } from '../errors'

export interface JobDefinition<S extends TSchema = TSchema> {
  name: string
  payload: S
  options: JobsOptions
  /** Top-level text fields that can be large: kept beside the job in Redis, not in its data (blobs.ts). */
  blobs?: readonly string[]
  /** The processor returns text (JSON) that is kept beside the job too, BullMQ holding a pointer (blobs.ts). */
  resultBlob?: boolean
}

export type PayloadOf<D> = D extends JobDefinition<infer S> ? Static<S> : never

export function defineJob<S extends TSchema>(
  name: string,
  payload: S,
  options: JobsOptions = {},
  blobs?: readonly (keyof Static<S> & string)[],
  resultBlob?: boolean,
): JobDefinition<S> {
  return {
    name,
    payload,
    options: { removeOnComplete: 1000, removeOnFail: 5000, ...options },
    ...(blobs ? { blobs } : {}),
    ...(resultBlob ? { resultBlob } : {}),
  }
}

/** Checks a payload against its definition (on enqueue and again on the worker). */
export function checkPayload<S extends TSchema>(def: JobDefinition<S>, data: unknown): Static<S> {
  const first = Value.Errors(def.payload, data).First()
  if (first) throw new AppError('invalid', `Invalid ${def.name} job payload at ${first.path || '/'}: ${first.message}`)
  return data as Static<S>
}
