// The $import worker's CPU per resource without a database: every line of an NDJSON folder read
// (ndjson-lines.ts), parsed and validated (import-batch.ts readImportLine), then, in batches of 500, its
// versions, index rows and COPY text prepared (write-tx.ts prepareCopy, rids given here) and that text
// turned into the bytes the COPY sends (UTF-8, as postgres.js's stream does). What the worker does for an
// import into an empty database, less the protocol, the queue and the waits: a figure that a loaded
// machine moves far less than the end-to-end one. Run it in two trees alternated for an A/B.
// Usage: bun run bench/import-cpu.ts <ndjson folder> [rounds=3]   (BENCH_PROFILE=1: one round, in a loop)
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { readImportLine } from '../shared/bulk/import-batch'
import { ndjsonLines } from '../shared/bulk/ndjson-lines'
import { newVersion } from '../shared/fhir/interactions/store-version'
import type { RepoCollaborators } from '../shared/fhir/repo/collaborators'
import type { NewVersion } from '../shared/fhir/repo/types'
import { joinPrepared, prepareCopy, type PreparedCopy } from '../shared/fhir/repo/write-tx'
import * as copyRows from '../shared/db/copy-rows'
import * as indexCopy from '../shared/fhir/search/index/index-copy'

const dir = process.argv[2]
const rounds = Number(process.argv[3] ?? 3)
if (!dir) throw new Error('usage: bun run bench/import-cpu.ts <ndjson folder> [rounds]')
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.ndjson'))
  .sort()
const collaborators = { indexes: indexCopy.copyingIndexWriter() } as unknown as RepoCollaborators
const limits = { maxLineBytes: 64 << 20, maxInputBytes: 2 ** 40, offset: 0, linesBefore: 0 }
const BATCH = 500

let bytesOut = 0
/** Wall time in the sending part (chunks and their encoding). */
let sendMs = 0
let rid = 1

/** As Repo.prepareCopy: in slices of 10, joined. */
const SLICE = 10

/** The text copyText writes to the stream (its copyChunks; in an older tree, the pieces appended). */
const chunksOf: (pieces: string[]) => string[] =
  (copyRows as any).copyChunks ??
  ((pieces: string[]) => {
    const out: string[] = []
    let text = ''
    for (const piece of pieces) {
      text += piece
      if (text.length >= 256 * 1024) {
        out.push(text)
        text = ''
      }
    }
    if (text !== '') out.push(text)
    return out
  })

/** The tables copyIndexRows writes (its copyTables; in an older tree, the same merge). */
const tablesOf: (copies: any[]) => Map<string, { pieces: string[] }> =
  (indexCopy as any).copyTables ??
  ((copies: any[]) => {
    const tables = new Map<string, { pieces: string[] }>()
    for (const c of copies)
      for (const t of c.tables) {
        const into = tables.get(t.table)
        if (into) for (const piece of t.pieces) into.pieces.push(piece)
        else tables.set(t.table, { pieces: [...t.pieces] })
      }
    return tables
  })

/** A fixed time, so that two trees' COPY text can be compared (its digest is printed). */
const NOW = new Date('2026-01-01T00:00:00.000Z')
let digest = new Bun.CryptoHasher('sha1')

function prepare(items: { resource: any }[]): void {
  const now = NOW
  const versions: NewVersion[] = items.map((i) => newVersion('', i.resource.resourceType, i.resource.id, 1, i.resource, now))
  for (const v of versions) v.rid = String(rid++)
  const slices: PreparedCopy[] = []
  for (let i = 0; i < versions.length; i += SLICE) slices.push(prepareCopy(collaborators, versions.slice(i, i + SLICE)) as PreparedCopy)
  const p = joinPrepared(slices)
  const t0 = performance.now()
  // What the COPY streams send: each table's text as UTF-8 bytes (postgres.js's Writable encodes it).
  const send = (pieces: string[]) => {
    for (const chunk of chunksOf(pieces)) {
      const bytes = Buffer.from(chunk)
      bytesOut += bytes.byteLength
      digest.update(bytes)
    }
  }
  send(p.resource)
  for (const t of tablesOf(p.indexes).values()) send(t.pieces)
  sendMs += performance.now() - t0
}

async function round(): Promise<{ n: number; us: number; gc: number; send: number }> {
  let n = 0
  sendMs = 0
  rid = 1
  digest = new Bun.CryptoHasher('sha1')
  const cpu0 = process.cpuUsage()
  for (const f of files) {
    let batch: { resource: any }[] = []
    for await (const l of ndjsonLines(Bun.file(join(dir, f)).stream(), limits)) {
      if (l.text === undefined && l.problem === undefined) continue
      const item = readImportLine(l)
      if (!('key' in item)) throw new Error(`line ${l.number} of ${f}: ${item.outcome}`)
      batch.push(item)
      n++
      if (batch.length >= BATCH) {
        prepare(batch)
        batch = []
      }
    }
    if (batch.length > 0) prepare(batch)
  }
  const cpu = process.cpuUsage(cpu0)
  const g0 = process.cpuUsage()
  Bun.gc(true)
  const gc = process.cpuUsage(g0)
  return { n, us: (cpu.user + cpu.system) / n, gc: (gc.user + gc.system) / n, send: (sendMs * 1000) / n }
}

for (let r = 0; r < rounds; r++) {
  const { n, us, gc, send } = await round()
  console.log(
    `round ${r + 1}: ${n} resources, ${us.toFixed(1)} µs CPU each (encoding the COPY text ${send.toFixed(1)}; then a full collection: ${gc.toFixed(2)} µs each); ${(bytesOut / n / (r + 1)).toFixed(0)} COPY bytes each, digest ${digest.digest('hex')}`,
  )
}
