// Configuration from environment variables, validated by one TypeBox schema. A bad value stops
// start-up with a message naming the variable.
import { availableParallelism } from 'node:os'
import { type Static, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { type Limits, LimitsEnv, readLimits } from './limits'
import { AllowList } from './net/allow-list'
import { ClientAddresses } from './net/client-address'

const Bool = Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')])
const Int = Type.String({ pattern: '^[0-9]+$' })
/** An AES-256 key: 64 hex characters or 32 bytes in base64 (either alphabet). */
const KEY = '^([0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)$'

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
  MAX_INCLUDED_RESOURCES: Type.Optional(Int),
  DB_POOL_MAX: Type.Optional(Int),
  DB_PLAN_CACHE_MODE: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('force_generic_plan'), Type.Literal('force_custom_plan')])),
  ADMIN_API_KEY: Type.Optional(Type.String({ minLength: 16 })),
  AUTH_DISABLED: Type.Optional(Bool),
  DEFAULT_PRETTY: Type.Optional(Bool),
  EXPUNGE_ENABLED: Type.Optional(Bool),
  ENFORCE_REFERENTIAL_INTEGRITY: Type.Optional(Bool),
  PATIENT_API_RATE_LIMIT: Type.Optional(Int),
  PATIENT_API_RATE_WINDOW_MS: Type.Optional(Int),
  KEY_CACHE_MS: Type.Optional(Int),
  EMBEDDED_SHARED_BUFFERS: Type.Optional(Type.String({ pattern: '^[0-9]+(kB|MB|GB)$' })),
  EMBEDDED_FSYNC: Type.Optional(Bool),
  QUEUE_PREFIX: Type.Optional(Type.String({ minLength: 1 })),
  DATA_DIR: Type.Optional(Type.String({ minLength: 1 })),
  LOG_LEVEL: Type.Optional(Type.Union([Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')])),
  TOKEN_ENCRYPTION_KEY: Type.Optional(Type.String({ pattern: KEY })),
  TOKEN_ENCRYPTION_RETIRED_KEYS: Type.Optional(Type.String({ pattern: `^${KEY.slice(1, -1)}(,${KEY.slice(1, -1)})*$` })),
  OUTBOUND_ALLOW: Type.Optional(Type.String()),
  TRUSTED_PROXIES: Type.Optional(Type.String()),
  OUTBOUND_TIMEOUT_MS: Type.Optional(Int),
  OUTBOUND_MAX_RESPONSE_BYTES: Type.Optional(Int),
  CONNECT_SYNC_MAX_PAGES: Type.Optional(Int),
  CONNECT_SYNC_MAX_RESOURCES: Type.Optional(Int),
  WEBHOOK_RETRY_DELAYS_MS: Type.Optional(Type.String({ pattern: '^[0-9]+(,[0-9]+)*$' })),
  CONNECT_RESYNC_INTERVAL_MS: Type.Optional(Int),
  JOB_LOCK_MS: Type.Optional(Int),
  JOB_STALLED_CHECK_MS: Type.Optional(Int),
  EXPORT_INLINE_MAX: Type.Optional(Int),
  XML_RENDER_CACHE_MB: Type.Optional(Int),
  BULK_STORAGE_DIR: Type.Optional(Type.String({ minLength: 1 })),
  BULK_FILE_TTL_HOURS: Type.Optional(Int),
  BULK_EXPORT_FILE_MAX_BYTES: Type.Optional(Int),
  BULK_IMPORT_ORIGINS: Type.Optional(Type.String()),
  BULK_IMPORT_MAX_LINE_BYTES: Type.Optional(Int),
  BULK_IMPORT_MAX_INPUT_BYTES: Type.Optional(Int),
  BULK_IMPORT_IDLE_TIMEOUT_MS: Type.Optional(Int),
  BULK_MAX_ACTIVE_PER_KEY: Type.Optional(Int),
  ...LimitsEnv,
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
  /** Resources `_include`/`_revinclude` may add to one search page (HAPI's maximumIncludesToLoadPerPage,
   *  1000); beyond, the Bundle carries the first ones and an OperationOutcome entry saying so. */
  maxIncludedResources: number
  dbPoolMax: number
  /**
   * PostgreSQL's plan_cache_mode on the pool's connections. The statements are prepared and written so
   * that one generic plan serves every parameter value (search: the index that drives each query is
   * named by the query's shape, not chosen by value). With `auto`, PostgreSQL may instead plan each
   * execution again when its estimates for the generic plan look worse: on Synthea x10 it did so for
   * `Observation?subject=...&code=...`, 550-640 µs of PostgreSQL CPU per search instead of 160-200.
   */
  dbPlanCacheMode: 'auto' | 'force_generic_plan' | 'force_custom_plan'
  adminApiKey?: string
  authDisabled: boolean
  defaultPretty: boolean
  expungeEnabled: boolean
  /** References to local resources must resolve on write (HAPI-1094), as HAPI's default. */
  enforceReferentialIntegrity: boolean
  /** Patient API requests each API key may make per window (429 beyond; 0: no limit), counted in Redis. */
  patientApiRateLimit: number
  patientApiRateWindowMs: number
  /** How long a node trusts an API key it verified, unless told of a key change first (auth/key-changes.ts). */
  keyCacheMs: number
  /** PGlite's shared_buffers (embedded form only), e.g. 32MB: held in its WASM heap, which never shrinks. */
  embeddedSharedBuffers: string
  /** The embedded database forces each commit to disk (db/embedded-fsync.ts): a power loss loses none. */
  embeddedFsync: boolean
  queuePrefix: string
  logLevel: 'debug' | 'info' | 'warn' | 'error'
  /** AES-256-GCM key of every secret stored at rest (64 hex or 32 bytes base64). Required with
   *  DATABASE_URL; unset in the embedded form, a key file beside the data directory (shared/secrets/keys.ts). */
  tokenEncryptionKey?: string
  /** Earlier keys: what they sealed still opens until `bun run secrets rotate` re-encrypts it. */
  tokenEncryptionRetiredKeys: string[]
  /** OUTBOUND_ALLOW: internal targets outbound calls may reach (shared/net/allow-list.ts); empty: none. */
  outboundAllow: string
  /** TRUSTED_PROXIES: proxies whose X-Forwarded-For names the client, for per-address rate limits
   *  (api/http/client-address.ts); empty: none, the connection's peer is the client. */
  trustedProxies: string
  /** Deadline of one outbound call to a source (discovery, token, one page of a pull). */
  outboundTimeoutMs: number
  /** Largest answer an outbound call reads. */
  outboundMaxResponseBytes: number
  /** Pages and resources one sync of a connection may pull (a source that pages forever fails the sync). */
  connectSyncMaxPages: number
  connectSyncMaxResources: number
  /** Delay before each webhook delivery attempt (the first is normally 0); its length is the number of attempts. */
  webhookRetryDelaysMs: number[]
  /** Every active connection is pulled again this often (0: never). */
  connectResyncIntervalMs: number
  /** How soon a job of a dead worker is taken over, on every queue (unset: each queue's own, workers/). */
  jobTakeover: JobTakeover
  /** $everything exports whose compartment has more index rows than this get their page cache built by a worker. */
  exportInlineMax: number
  /** Memory for FHIR XML recently written from stored JSON, per API process (0: none). */
  xmlRenderCacheBytes: number
  /** Bulk Data ($export, $import) settings: shared/bulk/. */
  bulk: BulkConfig
  /** What one request may cost (shared/limits.ts). */
  limits: Limits
}

export interface JobTakeover {
  /** A running job's lock lasts this long (its worker renews it every second); once it lapses the job is free. */
  lockMs?: number
  /** Workers look for jobs whose lock lapsed this often (BullMQ's stalledInterval). */
  stalledCheckMs?: number
}

export interface BulkConfig {
  /** Folder of the Bulk Data files, shared by every API node; unset: PostgreSQL (cluster form) or a folder
   *  beside the embedded database. */
  storageDir?: string
  /** Files (and the status of their job) are kept this long after the job ends. */
  fileTtlMs: number
  /** An export file is split once it holds this many bytes. */
  exportFileMaxBytes: number
  /** Origins (`https://host[:port]`) $import may fetch NDJSON from; none: $import by URL is refused. */
  importOrigins: string[]
  /** Longest NDJSON line $import reads (a longer one is reported as an error and skipped unread). */
  importMaxLineBytes: number
  /** Largest input $import reads from one URL. */
  importMaxInputBytes: number
  /** An input that sends nothing for this long is abandoned (the job fails, resumable). */
  importIdleTimeoutMs: number
  /** Exports (and, apart, imports) one API key may have queued or running at once; more: 429. */
  maxActivePerKey: number
}

export class ConfigError extends Error {}

const truthy = (v: string | undefined, dflt: boolean) => (v === undefined ? dflt : v === 'true' || v === '1')

/** Reads and validates the environment; throws ConfigError naming the first bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const known = Object.fromEntries(
    Object.keys(Env.properties)
      .filter((k) => env[k] !== undefined && env[k] !== '')
      .map((k) => [k, env[k]]),
  )
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
    maxIncludedResources: Number(e.MAX_INCLUDED_RESOURCES ?? 1000),
    dbPoolMax: e.DB_POOL_MAX !== undefined ? Number(e.DB_POOL_MAX) : defaultPoolSize(),
    dbPlanCacheMode: e.DB_PLAN_CACHE_MODE ?? 'force_generic_plan',
    adminApiKey: e.ADMIN_API_KEY,
    authDisabled: truthy(e.AUTH_DISABLED, false),
    defaultPretty: truthy(e.DEFAULT_PRETTY, false),
    expungeEnabled: truthy(e.EXPUNGE_ENABLED, true),
    enforceReferentialIntegrity: truthy(e.ENFORCE_REFERENTIAL_INTEGRITY, true),
    patientApiRateLimit: Number(e.PATIENT_API_RATE_LIMIT ?? 100),
    patientApiRateWindowMs: Math.max(1, Number(e.PATIENT_API_RATE_WINDOW_MS ?? 1000)),
    keyCacheMs: Number(e.KEY_CACHE_MS ?? 5_000),
    embeddedSharedBuffers: e.EMBEDDED_SHARED_BUFFERS ?? '32MB',
    embeddedFsync: truthy(e.EMBEDDED_FSYNC, true),
    queuePrefix: e.QUEUE_PREFIX ?? 'fhir',
    logLevel: e.LOG_LEVEL ?? 'info',
    tokenEncryptionKey: e.TOKEN_ENCRYPTION_KEY,
    tokenEncryptionRetiredKeys: e.TOKEN_ENCRYPTION_RETIRED_KEYS?.split(',') ?? [],
    outboundAllow: e.OUTBOUND_ALLOW ?? '',
    trustedProxies: e.TRUSTED_PROXIES ?? '',
    outboundTimeoutMs: Number(e.OUTBOUND_TIMEOUT_MS ?? 30_000),
    outboundMaxResponseBytes: Number(e.OUTBOUND_MAX_RESPONSE_BYTES ?? 32 * 1024 * 1024),
    connectSyncMaxPages: Number(e.CONNECT_SYNC_MAX_PAGES ?? 2000),
    connectSyncMaxResources: Number(e.CONNECT_SYNC_MAX_RESOURCES ?? 100_000),
    // https://medblocks.com/docs/webhooks/retries-and-disable: immediate, 1 min, 5 min, 30 min, 2 h, 12 h, 24 h x3
    webhookRetryDelaysMs: (e.WEBHOOK_RETRY_DELAYS_MS ?? '0,60000,300000,1800000,7200000,43200000,86400000,86400000,86400000').split(',').map(Number),
    connectResyncIntervalMs: Number(e.CONNECT_RESYNC_INTERVAL_MS ?? 6 * 3600_000),
    jobTakeover: {
      lockMs: e.JOB_LOCK_MS !== undefined ? Number(e.JOB_LOCK_MS) : undefined,
      stalledCheckMs: e.JOB_STALLED_CHECK_MS !== undefined ? Number(e.JOB_STALLED_CHECK_MS) : undefined,
    },
    exportInlineMax: Number(e.EXPORT_INLINE_MAX ?? 5000),
    xmlRenderCacheBytes: Number(e.XML_RENDER_CACHE_MB ?? 32) * 1024 * 1024,
    bulk: {
      storageDir: e.BULK_STORAGE_DIR,
      fileTtlMs: Number(e.BULK_FILE_TTL_HOURS ?? 24) * 3600_000,
      exportFileMaxBytes: Number(e.BULK_EXPORT_FILE_MAX_BYTES ?? 256 * 1024 * 1024),
      importOrigins: parseOrigins(e.BULK_IMPORT_ORIGINS ?? ''),
      importMaxLineBytes: Number(e.BULK_IMPORT_MAX_LINE_BYTES ?? 16 * 1024 * 1024),
      importMaxInputBytes: Number(e.BULK_IMPORT_MAX_INPUT_BYTES ?? 64 * 1024 ** 3),
      importIdleTimeoutMs: Number(e.BULK_IMPORT_IDLE_TIMEOUT_MS ?? 60_000),
      maxActivePerKey: Number(e.BULK_MAX_ACTIVE_PER_KEY ?? 4),
    },
    limits: readLimits(e),
  }
  if (cfg.port < 1 || cfg.port > 65535) throw new ConfigError(`Invalid configuration: PORT=${e.PORT}: must be 1-65535`)
  if (cfg.defaultPageSize < 1) throw new ConfigError('Invalid configuration: DEFAULT_PAGE_SIZE: must be at least 1')
  if (cfg.maxPageSize < cfg.defaultPageSize) throw new ConfigError('Invalid configuration: MAX_PAGE_SIZE: must be at least DEFAULT_PAGE_SIZE')
  if (cfg.jobTakeover.lockMs !== undefined && cfg.jobTakeover.lockMs < 1000) throw new ConfigError('Invalid configuration: JOB_LOCK_MS: must be at least 1000')
  if (cfg.jobTakeover.stalledCheckMs !== undefined && cfg.jobTakeover.stalledCheckMs < 100)
    throw new ConfigError('Invalid configuration: JOB_STALLED_CHECK_MS: must be at least 100')
  if (cfg.dbPoolMax < 1) throw new ConfigError('Invalid configuration: DB_POOL_MAX: must be at least 1')
  if (cfg.bulk.maxActivePerKey < 1) throw new ConfigError('Invalid configuration: BULK_MAX_ACTIVE_PER_KEY: must be at least 1')
  try {
    AllowList.parse(cfg.outboundAllow)
  } catch (err) {
    throw new ConfigError(`Invalid configuration: OUTBOUND_ALLOW: ${(err as Error).message}`)
  }
  try {
    ClientAddresses.parse(cfg.trustedProxies)
  } catch (err) {
    throw new ConfigError(`Invalid configuration: TRUSTED_PROXIES: ${(err as Error).message}`)
  }
  return cfg
}

/** BULK_IMPORT_ORIGINS: comma-separated origins, each an http(s) URL reduced to its origin. */
function parseOrigins(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      let u: URL
      try {
        u = new URL(s)
      } catch {
        throw new ConfigError(`Invalid configuration: BULK_IMPORT_ORIGINS: "${s}" is not a URL`)
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError(`Invalid configuration: BULK_IMPORT_ORIGINS: "${s}" is not http(s)`)
      return u.origin
    })
}

/**
 * The base URL of the links a patient follows and of the flow `url`: PUBLIC_BASE_URL, else this
 * server's own configured host and the port it listens on (a wildcard HOST reads as `localhost`).
 * Never a request's Host header, which a client chooses.
 */
export function publicBaseOf(config: Pick<Config, 'publicBaseUrl' | 'host'>, port: number): string {
  if (config.publicBaseUrl) return config.publicBaseUrl
  const host = ['0.0.0.0', '::', '[::]', ''].includes(config.host) ? 'localhost' : config.host
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`
}

/**
 * Connections per process when DB_POOL_MAX is unset: twice the cores plus two. More connections than
 * the database can run at once only queue inside PostgreSQL (measured on 2 cores: creates 1,550 req/s
 * with 20 connections, 1,870-1,880 with 6 or 8).
 */
function defaultPoolSize(): number {
  return 2 * availableParallelism() + 2
}
