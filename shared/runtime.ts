// What every process opens at start and closes at stop: the database (created and migrated if needed)
// and Redis. Nothing connects at module load.
import { type Config, ConfigError, loadConfig } from './config'
import { createSql, ensureDatabase, type Sql } from './db/client'
import { migrate } from './db/migrate'
import { log, setLogLevel } from './log'
import { createRedis, type Redis } from './redis'

export interface Runtime {
  config: Config
  sql: Sql
  redis: Redis
  close(): Promise<void>
}

export function configOrExit(): Config {
  try {
    const config = loadConfig()
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

export async function openRuntime(config: Config, role: 'producer' | 'worker'): Promise<Runtime> {
  await ensureDatabase(config.databaseUrl)
  const sql = createSql(config.databaseUrl, { max: config.dbPoolMax })
  const applied = await migrate(sql)
  if (applied.length) log.info('migrations applied', { applied })
  const redis = createRedis(config.redisUrl, role)
  return {
    config,
    sql,
    redis,
    async close() {
      await sql.end({ timeout: 5 })
      redis.disconnect()
    },
  }
}

/** Runs `stop` once on SIGTERM or SIGINT, then exits. */
export function onShutdown(stop: () => Promise<void>): void {
  let stopping = false
  const handler = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
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
