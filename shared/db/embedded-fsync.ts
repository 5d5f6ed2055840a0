// Commits of the embedded database that survive a power loss, not only a crash of the process. As
// published, PGlite (0.5) cannot: it starts PostgreSQL with fsync off (`-F` in its default start
// parameters), and its Node file system (Emscripten's NODEFS, which reads and writes the data folder's
// files through node:fs) has no fsync operation at all, so an fsync(2) from PostgreSQL returns at once with
// nothing forced to disk, and its fdatasync(2) is a stub that does nothing. `relaxedDurability` is not
// about this: it only says whether a query waits for syncToFs(), which copies an in-memory file system
// to IndexedDB or OPFS in a browser and is a no-op on NodeFS.
//
// Here NODEFS gets an fsync that calls fsync(2) on the host file (fs.fsyncSync), and PostgreSQL runs with
// fsync on and wal_sync_method=fsync (fdatasync being the stub): a commit returns once its WAL is on disk,
// and checkpoints flush data files as PostgreSQL does anywhere else.
import { fsyncSync } from 'node:fs'
import type { PGlite } from '@electric-sql/pglite'
import { NodeFS } from '@electric-sql/pglite/nodefs'

let fsyncs = 0

/** How many fsync(2) calls the embedded database made in this process (for tests). */
export const embeddedFsyncCount = () => fsyncs

interface NodeFsStream {
  nfd?: number
}

/** NodeFS whose files PostgreSQL can fsync. */
export class DurableNodeFS extends NodeFS {
  async init(pg: PGlite, opts: Parameters<NodeFS['init']>[1]) {
    const { emscriptenOpts } = await super.init(pg, opts)
    const fsyncOnHost = (mod: { FS: unknown }) => {
      // One stream_ops object serves every NODEFS file and directory.
      const nodefs = (mod.FS as { filesystems: { NODEFS: { stream_ops: Record<string, unknown> } } }).filesystems.NODEFS
      nodefs.stream_ops.fsync = (stream: NodeFsStream) => {
        if (stream.nfd === undefined) return 0
        fsyncSync(stream.nfd)
        fsyncs++
        return 0
      }
    }
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), fsyncOnHost] } }
  }
}

/** PGlite's default start parameters with fsync on, and the WAL forced by fsync(2). */
export function durableStartParams(defaults: readonly string[]): string[] {
  return [...defaults.filter((p) => p !== '-F'), '-c', 'fsync=on', '-c', 'wal_sync_method=fsync']
}
