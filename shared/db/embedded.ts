// Embedded PostgreSQL for a laptop: PGlite with its data in a local folder, reached by the same
// postgres.js client over @electric-sql/pglite-socket. PGlite is one session, so callers use a pool
// of one connection (transactions from two connections would otherwise interleave). The folder has one
// owner process (data-dir-owner.ts), claimed before PGlite opens it.
import { mkdirSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { claimDataDir, type DataDirClaim } from './data-dir-owner'
import { DurableNodeFS, durableStartParams } from './embedded-fsync'

export interface EmbeddedPostgres {
  url: string
  owner: DataDirClaim
  stop(): Promise<void>
}

export async function startEmbeddedPostgres(dataDir: string, sharedBuffers = '32MB', fsync = true): Promise<EmbeddedPostgres> {
  mkdirSync(dataDir, { recursive: true })
  const owner = claimDataDir(dataDir)
  const release = () => owner.release()
  process.on('exit', release)
  let db: PGlite
  let server: PGLiteSocketServer
  try {
    // shared_buffers lives in the WASM heap, which never shrinks: 32MB rather than PostgreSQL's 128MB took
    // 100 MB off the resident memory of the embedded start, reads no slower (BENCHMARKS.md, memory).
    // fsync: commits forced to disk (embedded-fsync.ts); off, PGlite as published (a power loss may lose the last ones).
    const params = fsync ? durableStartParams(PGlite.defaultStartParams) : [...PGlite.defaultStartParams]
    const startParams = [...params, '-c', `shared_buffers=${sharedBuffers}`]
    db = fsync ? await PGlite.create({ fs: new DurableNodeFS(dataDir), startParams }) : await PGlite.create(dataDir, { startParams })
    server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 1 })
    await server.start()
  } catch (err) {
    owner.release()
    throw err
  }
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    owner,
    async stop() {
      await server.stop()
      await db.close()
      owner.release()
      process.off('exit', release)
    },
  }
}
