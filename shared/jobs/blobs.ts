// Large texts of a job travel beside it, each as its own Redis string, not inside BullMQ's JSON: the
// Bundle a transaction job carries (megabytes) and the response Bundle it produces. In the job's data
// BullMQ would escape the text on the API node and the worker would parse that escaped text before the
// Bundle itself; as a job's return value the response would be stored twice (job hash and events stream)
// and decoded by every API node's QueueEvents, for every job of the cluster. Here the job's data keeps
// the other fields and the names of the stashed ones, and a stashed result leaves only a pointer.
//
// The texts go through Bun's native Redis client, not ioredis: on Synthea Bundles it takes a fifth to a
// half of the CPU ioredis does to write and read them (ioredis goes through node:net's buffered writes
// and joins a large reply's chunks in JavaScript). Payload keys go when the job completes or fails for
// good (and expire after a day in any case); a result key expires when BullMQ drops the completed job.
import { RedisClient } from 'bun'
import type { JobDefinition } from './definition'

const STASHED = '__blobs'
const RESULT = '__result'
const PAYLOAD_TTL_SECONDS = 24 * 3600

/**
 * The keys of jobs' texts. Like the API node's ioredis connection, it fails fast while Redis is down
 * rather than queueing commands, and connects again on the next command once Redis is back (Bun's own
 * reconnection would hold each command through all its attempts, and then give up for good).
 */
export class BlobStore {
  private readonly client: RedisClient
  private connecting: Promise<void> | undefined

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.client = new RedisClient(url, { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: 5000 })
  }

  key(def: JobDefinition, jobId: string, field: string): string {
    return `${this.prefix}:${def.name}:blob:${jobId}:${field}`
  }

  /** Stores text, or bytes as they are (read back as the text they encode). */
  async put(key: string, text: string | Uint8Array, ttlSeconds: number): Promise<void> {
    await (await this.ready()).set(key, text, 'EX', ttlSeconds)
  }

  async get(key: string): Promise<string | null> {
    return (await this.ready()).get(key)
  }

  async drop(keys: string[]): Promise<void> {
    if (keys.length > 0) await (await this.ready()).del(...keys)
  }

  private async ready(): Promise<RedisClient> {
    if (!this.client.connected) {
      this.connecting ??= this.client.connect().finally(() => {
        this.connecting = undefined
      })
      await this.connecting
    }
    return this.client
  }

  close(): void {
    this.client.close()
  }
}

/** The job data to enqueue: the definition's blob fields stored under their own keys first. */
export async function stashBlobs(blobs: BlobStore, def: JobDefinition, jobId: string, payload: unknown): Promise<unknown> {
  const data = payload as Record<string, unknown>
  const fields = (def.blobs ?? []).filter((f) => typeof data[f] === 'string' || data[f] instanceof Uint8Array)
  if (fields.length === 0) return data
  const rest: Record<string, unknown> = { ...data, [STASHED]: fields }
  for (const f of fields) delete rest[f]
  await Promise.all(fields.map((f) => blobs.put(blobs.key(def, jobId, f), data[f] as string | Uint8Array, PAYLOAD_TTL_SECONDS)))
  return rest
}

/**
 * The payload as enqueued, stashed fields read back as text (a field enqueued as bytes comes back as the
 * text they encode; a missing key is left out, and the payload check fails).
 */
export async function restoreBlobs(blobs: BlobStore, def: JobDefinition, jobId: string, data: unknown): Promise<unknown> {
  const fields = (data as Record<string, unknown> | null)?.[STASHED]
  if (!Array.isArray(fields)) return data
  const out: Record<string, unknown> = { ...(data as Record<string, unknown>) }
  delete out[STASHED]
  const texts = await Promise.all((fields as string[]).map((f) => blobs.get(blobs.key(def, jobId, f))))
  ;(fields as string[]).forEach((f, i) => {
    if (texts[i] !== null) out[f] = texts[i]
  })
  return out
}

/** Removes a job's stashed payload fields (it completed, or failed with no attempt left). */
export async function dropBlobs(blobs: BlobStore, def: JobDefinition, jobId: string, data: unknown): Promise<void> {
  const fields = (data as Record<string, unknown> | null)?.[STASHED]
  if (Array.isArray(fields)) await blobs.drop((fields as string[]).map((f) => blobs.key(def, jobId, f)))
}

/**
 * A job's result to hand to BullMQ: for a definition with `resultBlob`, the processor's text is stored
 * under its own key for as long as the completed job is kept, and BullMQ gets a pointer to it.
 */
export async function stashResult(blobs: BlobStore, def: JobDefinition, jobId: string, result: unknown): Promise<unknown> {
  if (!def.resultBlob || typeof result !== 'string') return result
  await blobs.put(blobs.key(def, jobId, 'result'), result, resultTtl(def))
  return { [RESULT]: true }
}

/** A job's result as the processor returned it: a stashed text read back (undefined once it expired). */
export async function restoreResult(blobs: BlobStore, def: JobDefinition, jobId: string, value: unknown): Promise<unknown> {
  if (!(value as Record<string, unknown> | null)?.[RESULT]) return value
  return (await blobs.get(blobs.key(def, jobId, 'result'))) ?? undefined
}

/** As long as BullMQ keeps the completed job (its removeOnComplete age), so the status reads it back. */
function resultTtl(def: JobDefinition): number {
  const keep = def.options.removeOnComplete
  return typeof keep === 'object' && 'age' in keep && keep.age ? keep.age : PAYLOAD_TTL_SECONDS
}
