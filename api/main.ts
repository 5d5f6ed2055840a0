// Composition root of an API node: config -> database -> Redis -> repo -> app -> listen.
import { ApiKeyVerifier, ensureBootstrapKey, generateKey } from '../shared/auth/api-keys'
import { listenKeyChanges } from '../shared/auth/key-changes'
import { loadServerSecret } from '../shared/auth/server-secret'
import { type Config, publicBaseOf } from '../shared/config'
import { prepareFhirDefinitions } from '../shared/fhir/prepare'
import { createRepo } from '../shared/fhir/store'
import { log } from '../shared/log'
import { waitReady } from '../shared/redis'
import { type Jobs, redisJobs } from '../shared/jobs/queues'
import { configOrExit, onShutdown, openRuntime, type Runtime } from '../shared/runtime'
import { createApp } from './app'
import { RedisRateCounts } from './http/rate-counts'

export interface ApiNode {
  port: number
  stop(): Promise<void>
}

/**
 * Starts an API node; with `shared`, on a runtime the caller owns (all-in-one start), and with `inProcess`,
 * the jobs of the workers of the same process (when there is no Redis).
 */
export async function startApi(config: Config, shared?: Runtime, inProcess?: Jobs): Promise<ApiNode> {
  prepareFhirDefinitions()
  const rt = shared ?? (await openRuntime(config))
  const bootstrapKey = await ensureBootstrapKey(rt.sql)
  const redis = rt.redis('producer')
  if (redis) await waitReady(redis)
  const sub = rt.redis('subscriber')
  const repo = await createRepo(rt.sql, config, redis && sub ? { pub: redis, sub } : undefined)
  // The embedded owner's local admin token (in the data directory's lock file, mode 0600): the CLI's way in.
  const localKey = rt.owner ? generateKey() : undefined
  const verifier = new ApiKeyVerifier(rt.sql, { adminKey: config.adminApiKey, localKey, ttlMs: config.keyCacheMs })
  // Keys created or revoked by another process (the CLI, another node) clear this node's key caches at once.
  if (config.databaseUrl) await listenKeyChanges(rt.sql)
  const events = rt.redis('subscriber')
  const blobs = rt.blobs()
  const jobs = redis && events && blobs ? redisJobs(redis, events, config.queuePrefix, blobs) : inProcess
  if (!jobs) throw new Error('REDIS_URL is required for an API node without workers in the same process (use `bun run start`)')
  let port = config.port
  const publicBase = () => publicBaseOf(config, port)
  const secret = await loadServerSecret(rt.sql)
  const rateCounts = config.redisUrl ? new RedisRateCounts(config.redisUrl) : undefined
  const app = await createApp({ config, sql: rt.sql, redis, rateCounts, repo, verifier, jobs, secret, cipher: rt.cipher, outbound: rt.outbound, publicBase })
  // Elysia asks Bun for SO_REUSEPORT unless told not to: two nodes would then share a port silently.
  app.listen({ port: config.port, hostname: config.host, reusePort: false, maxRequestBodySize: config.maxBodyBytes * 2 + 1024 * 1024 })
  port = app.server?.port ?? config.port
  if (rt.owner && localKey) rt.owner.publish(`http://${loopbackOf(config.host)}:${port}`, localKey)
  const fhirBase = `${config.publicBaseUrl ?? `http://localhost:${port}`}/fhir`
  log.info('api listening', { port, fhirBase })
  if (bootstrapKey) {
    process.stdout.write(`\nFirst start: created an admin API key (shown once, keep it):\n\n  ${bootstrapKey}\n\n`)
  }
  process.stdout.write(`FHIR base: ${fhirBase}\n`)
  return {
    port,
    async stop() {
      await app.stop()
      rateCounts?.close()
      // In process, the workers' stop closes the jobs.
      if (jobs !== inProcess) await jobs.close()
      if (!shared) await rt.close()
    },
  }
}

/** Where a process on this machine reaches a server listening on `host`. */
const loopbackOf = (host: string) => (host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host)

if (import.meta.main) {
  const config = configOrExit()
  const node = await startApi(config)
  onShutdown(() => node.stop())
}
