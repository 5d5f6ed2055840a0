// Configuration from environment variables, validated by one TypeBox schema. A bad value stops
// start-up with a message naming the variable.
import { type Static, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

const Bool = Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')])
const Int = Type.String({ pattern: '^[0-9]+$' })

export const Env = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  PORT: Type.Optional(Int),
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  PUBLIC_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  DEFAULT_PAGE_SIZE: Type.Optional(Int),
  MAX_PAGE_SIZE: Type.Optional(Int),
  MAX_BODY_BYTES: Type.Optional(Int),
  MAX_BUNDLE_ENTRIES: Type.Optional(Int),
  DB_POOL_MAX: Type.Optional(Int),
  ADMIN_API_KEY: Type.Optional(Type.String({ minLength: 16 })),
  AUTH_DISABLED: Type.Optional(Bool),
  DEFAULT_PRETTY: Type.Optional(Bool),
  EXPUNGE_ENABLED: Type.Optional(Bool),
  ENFORCE_REFERENTIAL_INTEGRITY: Type.Optional(Bool),
  QUEUE_PREFIX: Type.Optional(Type.String({ minLength: 1 })),
  DATA_DIR: Type.Optional(Type.String({ minLength: 1 })),
  LOG_LEVEL: Type.Optional(Type.Union([Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')])),
})
export type Env = Static<typeof Env>

export interface Config {
  /** PostgreSQL; undefined means the embedded PGlite database in `dataDir`. */
  databaseUrl?: string
  /** Redis; undefined means jobs run in process. */
  redisUrl?: string
  /** Folder of the embedded database. */
  dataDir: string
  port: number
  host: string
  /** Base URL of the server as clients see it, without trailing slash; `/fhir` is appended for FHIR.
   *  Unset: taken from each request's own URL, as HAPI does. */
  publicBaseUrl?: string
  defaultPageSize: number
  maxPageSize: number
  maxBodyBytes: number
  /** Entries a transaction or batch Bundle may have (413 beyond). */
  maxBundleEntries: number
  dbPoolMax: number
  adminApiKey?: string
  authDisabled: boolean
  defaultPretty: boolean
  expungeEnabled: boolean
  /** References to local resources must resolve on write (HAPI-1094), as HAPI's default. */
  enforceReferentialIntegrity: boolean
  queuePrefix: string
  logLevel: 'debug' | 'info' | 'warn' | 'error'
}

export class ConfigError extends Error {}

const truthy = (v: string | undefined, dflt: boolean) => (v === undefined ? dflt : v === 'true' || v === '1')

/** Reads and validates the environment; throws ConfigError naming the first bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const known = Object.fromEntries(Object.keys(Env.properties).filter((k) => env[k] !== undefined && env[k] !== '').map((k) => [k, env[k]]))
  const first = Value.Errors(Env, known).First()
  if (first) {
    const name = first.path.replace(/^\//, '')
    throw new ConfigError(`Invalid configuration: ${name}=${JSON.stringify(known[name])}: ${first.message}`)
  }
  const e = known as Env
  const port = Number(e.PORT ?? 8080)
  const cfg: Config = {
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    dataDir: e.DATA_DIR ?? '.data/pglite',
    port,
    host: e.HOST ?? '0.0.0.0',
    publicBaseUrl: e.PUBLIC_BASE_URL?.replace(/\/+$/, ''),
    defaultPageSize: Number(e.DEFAULT_PAGE_SIZE ?? 20),
    maxPageSize: Number(e.MAX_PAGE_SIZE ?? 200),
    maxBodyBytes: Number(e.MAX_BODY_BYTES ?? 50 * 1024 * 1024),
    maxBundleEntries: Number(e.MAX_BUNDLE_ENTRIES ?? 20_000),
    dbPoolMax: Number(e.DB_POOL_MAX ?? 20),
    adminApiKey: e.ADMIN_API_KEY,
    authDisabled: truthy(e.AUTH_DISABLED, false),
    defaultPretty: truthy(e.DEFAULT_PRETTY, false),
    expungeEnabled: truthy(e.EXPUNGE_ENABLED, true),
    enforceReferentialIntegrity: truthy(e.ENFORCE_REFERENTIAL_INTEGRITY, true),
    queuePrefix: e.QUEUE_PREFIX ?? 'fhir',
    logLevel: e.LOG_LEVEL ?? 'info',
  }
  if (cfg.port < 1 || cfg.port > 65535) throw new ConfigError(`Invalid configuration: PORT=${e.PORT}: must be 1-65535`)
  if (cfg.defaultPageSize < 1) throw new ConfigError('Invalid configuration: DEFAULT_PAGE_SIZE: must be at least 1')
  if (cfg.maxPageSize < cfg.defaultPageSize) throw new ConfigError('Invalid configuration: MAX_PAGE_SIZE: must be at least DEFAULT_PAGE_SIZE')
  if (cfg.dbPoolMax < 1) throw new ConfigError('Invalid configuration: DB_POOL_MAX: must be at least 1')
  return cfg
}
