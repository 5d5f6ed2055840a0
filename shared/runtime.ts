// What every process opens at start and closes at stop: the database (created and migrated if needed)
// and Redis. Nothing connects at module load.
import { type Config, ConfigError, loadConfig } from './config'
import { createSql, ensureDatabase, type Sql } from './db/client'
import { type DataDirClaim, DataDirInUse } from './db/data-dir-owner'
import { type EmbeddedPostgres, startEmbeddedPostgres } from './db/embedded'
import { migrate } from './db/migrate'
import { log, setLogLevel } from './log'
import { BlobStore } from './jobs/blobs'
import { Outbound } from './net/client'
import { createRedis, type Redis } from './redis'
import { SecretCipher } from './secrets/cipher'
import { checkKeyConfig, loadKeys } from './secrets/keys'
import { sealLegacySecrets } from './secrets/stored-secrets'

export interface Runtime {
  config: Config
  sql: Sql
  /** A Redis connection for a role; undefined when no REDIS_URL is configured (jobs run in process). */
  redis(role: 'producer' | 'worker' | 'subscriber'): Redis | undefined
  /** The store of jobs' large texts (blobs.ts); undefined without REDIS_URL. */
  blobs(): BlobStore | undefined
  /** Seals and opens stored secrets, with keys from outside the database (secrets/keys.ts). */
  cipher: SecretCipher
  /** The one outbound HTTP client (net/client.ts). */
  outbound: Outbound
  /** The claim on the embedded data directory (undefined with DATABASE_URL); the API publishes its port in it. */
  owner?: DataDirClaim
  close(): Promise<void>
}

export function configOrExit(): Config {
  try {
    const config = loadConfig()
    checkKeyConfig(config)
    setLogLevel(config.logLevel)
    return config
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
}

/**
 * Opens the database (embedded when no DATABASE_URL) once per process; Redis connections are made per role.
 * `work`: what the process's statements are budgeted as (SEARCH_ or JOB_STATEMENT_TIMEOUT_MS): an API node
 * (and the all-in-one process) mostly searches; a worker runs jobs.
 */
export async function openRuntime(config: Config, work: 'api' | 'jobs' = 'api'): Promise<Runtime> {
  // First, before any connection: the cluster form refuses to start without its key.
  const keys = loadKeys(config)
  let embedded: EmbeddedPostgres | undefined
  let sql: Sql
  if (config.databaseUrl) {
    await ensureDatabase(config.databaseUrl)
    const budgets = config.limits.statementTimeoutMs
    sql = createSql(config.databaseUrl, {
      max: config.dbPoolMax,
      planCacheMode: config.dbPlanCacheMode,
      statementTimeoutMs: work === 'jobs' ? budgets.job : budgets.search,
    })
  } else {
    try {
      embedded = await startEmbeddedPostgres(config.dataDir, config.embeddedSharedBuffers, config.embeddedFsync)
    } catch (err) {
      // A second process on the same folder stops here, before it opens PGlite or binds a port.
      if (!(err instanceof DataDirInUse)) throw err
      process.stderr.write(`${err.message}\n`)
      process.exit(2)
    }
    sql = createSql(embedded.url, { max: 1 })
    log.info('embedded PostgreSQL (PGlite)', { dataDir: config.dataDir })
  }
  const applied = await migrate(sql)
  if (applied.length) log.info('migrations applied', { applied })
  const cipher = new SecretCipher(keys)
  await sealLegacySecrets(sql, cipher)
  const connections = new Map<string, Redis>()
  let blobs: BlobStore | undefined
  return {
    config,
    sql,
    cipher,
    outbound: Outbound.fromConfig(config),
    owner: embedded?.owner,
    redis(role) {
      if (!config.redisUrl) return undefined
      let r = connections.get(role)
      if (!r) connections.set(role, (r = createRedis(config.redisUrl, role === 'producer' ? 'producer' : 'worker')))
      return r
    },
    blobs() {
      if (config.redisUrl) blobs ??= new BlobStore(config.redisUrl, config.queuePrefix)
      return blobs
    },
    async close() {
      await sql.end({ timeout: 5 })
      for (const r of connections.values()) r.disconnect()
      blobs?.close()
      await embedded?.stop()
    },
  }
}

/** How long a stop may take before the process exits anyway (a hung request or query must not keep it up). */
export const SHUTDOWN_GRACE_MS = 5_000

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits; exits anyway after SHUTDOWN_GRACE_MS, or at a second
 * signal. Committed writes are durable without a clean stop (the embedded lock of a dead pid is stale).
 */
export function onShutdown(stop: () => Promise<void>): void {
  let stopping = false
  const handler = async (signal: string) => {
    if (stopping) {
      log.warn('second signal: exiting now', { signal })
      process.exit(1)
    }
    stopping = true
    log.info('shutting down', { signal })
    setTimeout(() => {
      log.warn('shutdown took too long: exiting', { graceMs: SHUTDOWN_GRACE_MS })
      process.exit(1)
    }, SHUTDOWN_GRACE_MS).unref()
    try {
      await stop()
    } catch (err) {
      log.error('shutdown failed', { err: String(err) })
    }
    process.exit(0)
  }
  process.on('SIGTERM', () => handler('SIGTERM'))
  process.on('SIGINT', () => handler('SIGINT'))
}
