// NDJSON uploaded to the server as an $import input: `POST [base]/$bulk-upload` streams the body into
// the file store in chunks (never held whole) and answers the file's URL, which an $import then names as
// the url of an input; `POST [base]/$bulk-upload?upload={id}` appends the next part of a file larger than
// one request may be (parts in order, one at a time, each whole lines or at least whole characters). The
// worker reads the file from the store instead of fetching it: the same batches, validation,
// checkpoints and error files as an input from an allow-listed origin. This is how
// `bun run import --ndjson` sends local files. The upload belongs to its key and expires with the other
// bulk files.
import type { Sql } from '../db/client'
import { AppError } from '../errors'
import { isJobId } from '../jobs/admin-job'
import { log } from '../log'
import type { BulkFileStore } from './file-store'

/** The file id of an upload in the store (its job id is the upload's id). */
export const UPLOAD_FILE = 'input'

const CHUNK_BYTES = 8 * 1024 * 1024

export interface Upload {
  id: string
  bytes: number
  chunks: number
}

/**
 * Stores the body as a new upload, or as the next part of `append` (the caller's own upload). 413 past
 * `maxBytes` in all, 400 when it is not UTF-8, 409 when another part was appended meanwhile; the part's
 * chunks are removed then.
 */
export async function storeUpload(
  sql: Sql,
  store: BulkFileStore,
  body: ReadableStream<Uint8Array> | null,
  owner: string | null,
  maxBytes: number,
  append?: Upload,
): Promise<Upload> {
  const id = append?.id ?? crypto.randomUUID()
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const first = append?.chunks ?? 0
  let bytes = append?.bytes ?? 0
  let chunks = first
  let text = ''
  try {
    for await (const part of body ?? []) {
      bytes += part.byteLength
      if (bytes > maxBytes) throw new AppError('too-large', `The upload is larger than the limit of ${maxBytes} bytes (BULK_IMPORT_MAX_INPUT_BYTES)`)
      text += decode(decoder, part, false)
      if (text.length >= CHUNK_BYTES) {
        await store.putChunk(id, UPLOAD_FILE, chunks++, text)
        text = ''
      }
    }
    text += decode(decoder, new Uint8Array(), true)
    if (text !== '') await store.putChunk(id, UPLOAD_FILE, chunks++, text)
    if (!append) await sql`insert into bulk_upload (id, owner, bytes, chunks) values (${id}, ${owner}, ${bytes}, ${chunks})`
    else {
      const moved = await sql`update bulk_upload set bytes = ${bytes}, chunks = ${chunks} where id = ${id} and chunks = ${first}`
      if (moved.count === 0) throw new AppError('conflict', `Another part was appended to upload ${id} meanwhile: append parts one at a time`)
    }
    return { id, bytes, chunks }
  } catch (err) {
    if (!append) await store.removeJob(id).catch(() => {})
    throw err
  }
}

function decode(decoder: TextDecoder, part: Uint8Array, end: boolean): string {
  try {
    return decoder.decode(part, { stream: !end })
  } catch {
    throw new AppError('invalid', 'The upload is not UTF-8 text (NDJSON is)')
  }
}

/** An upload for its own key (404 for another key's, an unknown or an expired one). */
export async function uploadFor(sql: Sql, id: string, owner: string | null | undefined, ttlMs: number): Promise<Upload> {
  const [row] = isJobId(id)
    ? await sql<
        { bytes: string; chunks: number; owner: string | null; created_at: Date }[]
      >`select bytes::text, chunks, owner, created_at from bulk_upload where id = ${id}`
    : []
  if (!row || (owner !== undefined && row.owner !== owner) || row.created_at.getTime() + ttlMs < Date.now())
    throw new AppError('not-found', `No upload ${id} for this API key`)
  return { id, bytes: Number(row.bytes), chunks: row.chunks }
}

/** The upload a URL of this server names (`[base]/$bulk-file/{id}/input`), if it names one. */
export function uploadIdOf(url: string, baseUrl: string): string | undefined {
  const prefix = `${baseUrl}/$bulk-file/`
  if (!url.startsWith(prefix)) return undefined
  const [id, file, ...rest] = url.slice(prefix.length).split('/')
  return file === UPLOAD_FILE && rest.length === 0 ? id : undefined
}

/** The URL an upload is read back from (and named in an $import). */
export function uploadUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/$bulk-file/${id}/${UPLOAD_FILE}`
}

/** Removes uploads older than `ttlMs` with their text; returns how many. */
export async function purgeUploads(sql: Sql, store: BulkFileStore, ttlMs: number): Promise<number> {
  const rows = await sql<
    { id: string }[]
  >`select id from bulk_upload where created_at < now() - ${ttlMs} * interval '1 millisecond' order by created_at limit 1000`
  for (const { id } of rows) {
    try {
      await store.removeJob(id)
      await sql`delete from bulk_upload where id = ${id}`
    } catch (err) {
      log.warn('upload not purged; next pass retries', { id, err: String(err) })
    }
  }
  return rows.length
}
