// The $export job: pages of the scan (export-scan.ts) appended to one NDJSON file per type (split past
// BULK_EXPORT_FILE_MAX_BYTES), written to the file store in chunks. Each chunk is written with the
// checkpoint that follows it, the keyset cursor and every file's size included, so a worker killed
// mid-export resumes after the last chunk it recorded and a chunk written but not recorded is written
// again (same number). The scan starts at once, while transactionTime settles (export-settle.ts).
// https://hl7.org/fhir/uv/bulkdata/STU2/export.html
import type { Sql, TxSql } from '../db/client'
import { resourceTypes } from '../fhir/definitions/resource-types'
import { parseFhirJson } from '../fhir/format/json'
import { patientCompartmentParams, patientCompartmentTypes } from '../fhir/search/query/compartment'
import { extractIndexes } from '../fhir/search/index/extract'
import { applySubset } from '../fhir/subset'
import { type AdminJobKind, JobCancelled } from '../jobs/admin-job'
import { BULK_EXPORT, type BulkJobHeader } from './bulk-job'
import type { ExportParams } from './export-request'
import { NOT_EXPORTED } from './export-request'
import { exportScan, type PageRow, type ScanRow } from './export-scan'
import { lateFrom, lateWork, settle, type Unsettled, type UnsettledChunk } from './export-settle'
import type { BulkFileStore } from './file-store'

export type ExportJobParams = ExportParams & BulkJobHeader

export interface ExportFile {
  /** Unique within the job: `<type>-<n>`. */
  id: string
  type: string
  count: number
  bytes: number
  chunks: number
}

interface Piece {
  /** Starts a new file of its type (else it continues the type's last file). */
  newFile: boolean
  parts: string[]
  count: number
  bytes: number
}

interface ExportCursor {
  /** The last rid read. */
  after: string
  exported: number
  /** Every file so far; the last of a type is the one being written. */
  files: ExportFile[]
  /** While transactionTime has not settled: what was written meanwhile (export-settle.ts). */
  unsettled?: Unsettled
}

export interface ExportResult {
  files: ExportFile[]
  exported: number
}

const PAGE = 2000
/**
 * A page's stored text at most (with the row that reaches it): two pages are held at once, the one written
 * out and the next, read meanwhile. At Synthea's sizes (1-3 kB a resource) pages are still cut by PAGE.
 */
export const PAGE_BYTES = 16 * 1024 * 1024
/** Text kept in memory before it is written out as chunks, and a checkpoint taken. */
const FLUSH_BYTES = 8 * 1024 * 1024
/**
 * JavaScript heap growth (since the job started) past which a flush is followed by a full collection
 * rather than a hint: left to itself the heap grows far past what is live (the written text is garbage).
 * Synthea x10 export, worker RSS growth to PostgreSQL / to a folder: hints only 207-213 / 168-187 MB; a
 * full collection after every flush 94 / 74 MB but 9-13 µs more worker CPU a resource (18 -> 27-31);
 * past 64 MB of growth 142 / 162 MB for 2-4 µs.
 */
const FULL_GC_HEAP_GROWTH = 64 * 1024 * 1024

export function exportJobKind(store: BulkFileStore, maxFileBytes: number): AdminJobKind<ExportJobParams> {
  return {
    kind: BULK_EXPORT,
    async run(run, p) {
      try {
        const cursor: ExportCursor = (run.cursor as ExportCursor | undefined) ?? { after: '0', exported: 0, files: [] }
        const types = exportTypes(p)
        if (run.cursor === undefined) {
          cursor.unsettled = { lateFrom: await lateFrom(run.sql), chunks: [] }
          await run.checkpoint({
            cursor,
            processed: 0,
            total: p.level === 'system' && !p.typeFilters.length && !p.since ? await countOf(run.sql, types) : undefined,
          })
        }
        const scan = await exportScan(run.sql, p, types, p.transactionTime, p.baseUrl)
        const shape = rowShaper(p)
        // transactionTime settles while the scan reads (export-settle.ts).
        let settled = cursor.unsettled === undefined
        const settling = settled ? Promise.resolve() : settle(run.sql, p.transactionTime)
        settling.then(
          () => {
            settled = true
          },
          () => {},
        )
        let flushedAfter = cursor.after
        const heapAtStart = process.memoryUsage().heapUsed
        // Text waiting to be written, per type: one piece per file it goes to (a type's text that would
        // take its file past the size limit starts a piece for a new file).
        const pending = new Map<string, Piece[]>()
        let buffered = 0
        const append = (type: string, text: string) => {
          const bytes = Buffer.byteLength(text) + 1
          let pieces = pending.get(type)
          if (!pieces) pending.set(type, (pieces = [{ newFile: !lastFileOf(cursor.files, type), parts: [], count: 0, bytes: 0 }]))
          let piece = pieces[pieces.length - 1]
          const fileBytes = (piece.newFile ? 0 : (lastFileOf(cursor.files, type)?.bytes ?? 0)) + piece.bytes
          if (fileBytes > 0 && fileBytes + bytes > maxFileBytes) pieces.push((piece = { newFile: true, parts: [], count: 0, bytes: 0 }))
          piece.parts.push(text, '\n')
          piece.count++
          piece.bytes += bytes
          buffered += bytes
          cursor.exported++
        }
        const flush = async () => {
          const chunks: { file: ExportFile; n: number; text: string }[] = []
          const unsettled = cursor.unsettled
          for (const [type, pieces] of pending) {
            for (const piece of pieces) {
              let file = lastFileOf(cursor.files, type)
              if (piece.newFile || !file) {
                file = { id: `${type}-${cursor.files.filter((f) => f.type === type).length + 1}`, type, count: 0, bytes: 0, chunks: 0 }
                cursor.files.push(file)
              }
              chunks.push({ file, n: file.chunks, text: piece.parts.join('') })
              unsettled?.chunks.push({ fileId: file.id, n: file.chunks, type, after: flushedAfter, upTo: cursor.after, count: piece.count, bytes: piece.bytes })
              file.chunks++
              file.count += piece.count
              file.bytes += piece.bytes
            }
          }
          const write = async (tx?: TxSql) => {
            for (const c of chunks) await store.putChunk(run.id, c.file.id, c.n, c.text, tx)
            await run.checkpoint({ cursor, processed: cursor.exported }, tx)
          }
          // In the database, the chunks commit with the checkpoint; in a folder they are written first.
          if (store.inDatabase) await run.sql.begin((tx) => write(tx))
          else await write()
          pending.clear()
          buffered = 0
          flushedAfter = cursor.after
          Bun.gc(process.memoryUsage().heapUsed - heapAtStart > FULL_GC_HEAP_GROWTH)
        }
        /**
         * A large row stored as it is exported: written in slices of its text, each its own chunk, read one
         * at a time, so that neither the worker nor a download holds it whole (a row of 40 MB held whole
         * grew the worker by some 450 MB: its message, its text, the file's text, the statement writing
         * it). The slices and the checkpoint after the row commit together, as a flush's chunks do.
         */
        const writeLarge = async (row: PageRow, advance: boolean) => {
          await flush()
          let file = lastFileOf(cursor.files, row.type)
          if (!file || (file.bytes > 0 && file.bytes + row.size + 1 > maxFileBytes)) {
            file = { id: `${row.type}-${cursor.files.filter((f) => f.type === row.type).length + 1}`, type: row.type, count: 0, bytes: 0, chunks: 0 }
            cursor.files.push(file)
          }
          const into = file
          const write = async (tx?: TxSql) => {
            const first = into.chunks
            for await (const { text, last } of scan.slices(row, tx)) {
              const n = into.chunks++
              await store.putChunk(run.id, into.id, n, last ? `${text}\n` : text, tx)
              const mine = n === first ? { count: 1, bytes: row.size + 1 } : { count: 0, bytes: 0 }
              cursor.unsettled?.chunks.push({ fileId: into.id, n, type: row.type, after: flushedAfter, upTo: row.rid, ...mine })
            }
            into.count++
            into.bytes += row.size + 1
            cursor.exported++
            if (advance) cursor.after = row.rid
            await run.checkpoint({ cursor, processed: cursor.exported }, tx)
          }
          if (store.inDatabase) await run.sql.begin((tx) => write(tx))
          else await write()
          flushedAfter = cursor.after
        }
        /**
         * Once settled: what was read before is written out, and the chunks holding rows a late write
         * changed are written again from the rows as they are now; late rows no chunk holds are added.
         */
        const resolveLate = async (u: Unsettled) => {
          await flush()
          const work = lateWork(u, await scan.lateRows(u.lateFrom, cursor.after))
          const rewrites: { chunk: UnsettledChunk; text: string }[] = []
          // Chunks of one type and range (its file split inside one flush): the rows all go to the first.
          for (const group of Map.groupBy(work.chunks, (c) => `${c.type} ${c.after}`).values()) {
            let text = ''
            let count = 0
            for (const row of await scan.range(group[0].type, group[0].after, group[0].upTo)) {
              const line = shape(row)
              if (line === undefined) continue
              text += `${line}\n`
              count++
            }
            for (const [i, chunk] of group.entries()) {
              const file = cursor.files.find((f) => f.id === chunk.fileId) as ExportFile
              const now = i === 0 ? { text, count, bytes: Buffer.byteLength(text) } : { text: '', count: 0, bytes: 0 }
              file.count += now.count - chunk.count
              file.bytes += now.bytes - chunk.bytes
              cursor.exported += now.count - chunk.count
              rewrites.push({ chunk, text: now.text })
            }
          }
          cursor.unsettled = undefined
          const write = async (tx?: TxSql) => {
            for (const { chunk, text } of rewrites) await store.putChunk(run.id, chunk.fileId, chunk.n, text, tx)
            await run.checkpoint({ cursor, processed: cursor.exported }, tx)
          }
          if (store.inDatabase) await run.sql.begin((tx) => write(tx))
          else await write()
          if (work.uncovered.length === 0) return
          for (const row of await scan.sized(work.uncovered)) await add(row, false)
        }
        /** A row read: appended, or a large one written in slices (`advance`: the cursor moves to it). */
        const add = async (row: PageRow, advance: boolean) => {
          if (row.content !== null) {
            const text = shape(row as ScanRow)
            if (text !== undefined) append(row.type, text)
          } else if (shape.asStored(row)) {
            await writeLarge(row, advance)
          } else {
            // A large row that must be parsed (`_elements`, a version from history to check): its text
            // read whole, but by slices (one message of the whole row held it three times over), and
            // what parsing it left collected before the next (8 rows of 40 MB with `_elements` grew the
            // worker by 445-504 MB).
            const parts: string[] = []
            for await (const { text } of scan.slices(row)) parts.push(text)
            const text = shape({ ...row, content: parts.join('') })
            if (text !== undefined) append(row.type, text)
            Bun.gc(true)
          }
        }
        // The next page is asked for as soon as this one has come (its keyset start is this one's last
        // rid): the database reads it while this one is written out.
        let next = scan.page(cursor.after, PAGE, PAGE_BYTES)
        for (;;) {
          const { rows, more } = await next
          if (more) next = scan.page(rows[rows.length - 1].rid, PAGE, PAGE_BYTES)
          let reread = false
          for (const row of rows) {
            if (row.content === null && cursor.unsettled && shape.asStored(row)) {
              // Slices cannot be rewritten once transactionTime settles (a late row's chunks are written
              // again from the row read whole): settle first, then read on from here again.
              await settling
              await next?.catch(() => {})
              await resolveLate(cursor.unsettled)
              reread = true
              break
            }
            await add(row, true)
            cursor.after = row.rid
            // Written out as soon as FLUSH_BYTES are held, inside a page too: a chunk is what one flush
            // writes, and a download reads a chunk whole. Flushed once a page, a page of 40 resources of
            // 5 MB made a chunk of 200 MB, whose download grew the API node by 1 GB.
            if (buffered >= FLUSH_BYTES)
              await flush().catch(async (err) => {
                await next.catch(() => {}) // not left unhandled
                throw err
              })
          }
          if (reread) {
            next = scan.page(cursor.after, PAGE, PAGE_BYTES)
            continue
          }
          if (cursor.unsettled && (settled || !more)) {
            await settling
            if (more) await next.catch(() => {}) // may have been read before the settling: read again
            await resolveLate(cursor.unsettled)
            if (more) next = scan.page(cursor.after, PAGE, PAGE_BYTES)
          }
          if (!more) break
        }
        await flush() // the last checkpoint: a deletion asked meanwhile cancels the job here
        return { files: cursor.files, exported: cursor.exported } satisfies ExportResult
      } catch (err) {
        if (err instanceof JobCancelled) await store.removeJob(run.id)
        throw err
      }
    },
  }
}

/** The types the export reads: `_type`, or every type the level covers (Binary never, as HAPI). */
export function exportTypes(p: ExportParams): string[] {
  if (p.types) return p.types
  if (p.level === 'system') return resourceTypes().filter((t) => t !== NOT_EXPORTED)
  return ['Patient', ...patientCompartmentTypes()]
}

function lastFileOf(files: ExportFile[], type: string): ExportFile | undefined {
  for (let i = files.length - 1; i >= 0; i--) if (files[i].type === type) return files[i]
  return undefined
}

/**
 * A row as the line to write, or undefined when it is not exported: the stored text as it is, unless
 * `_elements` asks for a subset, or a version read from history must still be checked for the
 * compartment the export covers.
 */
function rowShaper(p: ExportParams): ((row: ScanRow) => string | undefined) & { asStored(row: Pick<ScanRow, 'type' | 'changed'>): boolean } {
  const elements = elementsByType(p.elements)
  const patients = p.patients ? new Set(p.patients) : undefined
  const codes = patientCompartmentParams()
  const asStored = (row: Pick<ScanRow, 'type' | 'changed'>) => !elements?.(row.type) && !(row.changed && p.level !== 'system')
  const shape = (row: ScanRow) => {
    if (asStored(row)) return row.content
    const subset = elements?.(row.type)
    const resource = parseFhirJson(row.content)
    if (row.changed && p.level !== 'system' && !inCompartment(resource, row, codes.get(row.type) ?? [], patients)) return undefined
    return JSON.stringify(subset ? applySubset(resource, { elements: subset }) : resource)
  }
  return Object.assign(shape, { asStored })
}

/** The compartment test of export-scan.ts, on a version read from history (its index rows are gone). */
function inCompartment(resource: any, row: ScanRow, codes: readonly string[], patients: Set<string> | undefined): boolean {
  if (row.type === 'Patient' && (!patients || patients.has(row.id))) return true
  return extractIndexes(resource).reference.some(
    (ref) => ref.targetType === 'Patient' && codes.includes(ref.code) && ref.targetId !== null && (!patients || patients.has(ref.targetId)),
  )
}

/** `_elements` per type: `Type.element` for that type, a bare `element` for every type. */
function elementsByType(elements: string[] | undefined): ((type: string) => Set<string> | undefined) | undefined {
  if (!elements) return undefined
  const common = elements.filter((e) => !e.includes('.'))
  const cache = new Map<string, Set<string> | undefined>()
  return (type) => {
    if (!cache.has(type)) {
      const own = elements.filter((e) => e.startsWith(`${type}.`)).map((e) => e.slice(type.length + 1))
      cache.set(type, own.length + common.length > 0 ? new Set([...common, ...own]) : undefined)
    }
    return cache.get(type)
  }
}

/** How many resources of `types` there are (tombstones included): the progress total of a whole-type export. */
async function countOf(sql: Sql, types: string[]): Promise<number> {
  const [row] = await sql<{ n: string }[]>`select coalesce(sum(n), 0)::text as n from resource_count where res_type = any(${types}::text[])`
  return Number(row.n)
}
