// Embedded PostgreSQL for a laptop: PGlite with its data in a local folder, reached by the same
// postgres.js client over @electric-sql/pglite-socket. PGlite is one session, so callers use a pool
// of one connection (transactions from two connections would otherwise interleave).
import { mkdirSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

export interface EmbeddedPostgres {
  url: string
  stop(): Promise<void>
}

export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  mkdirSync(dataDir, { recursive: true })
  const db = await PGlite.create(dataDir)
  const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 1 })
  await server.start()
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    async stop() {
      await server.stop()
      await db.close()
    },
  }
}
