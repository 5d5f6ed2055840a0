// What the application is built from: the explicit dependencies createApp (app.ts) hands to each
// surface. Its own file, so that the surfaces need not import app.ts, which imports them.
import type { ApiKeyVerifier } from '../shared/auth/api-keys'
import type { Config } from '../shared/config'
import type { Sql } from '../shared/db/client'
import type { Repo } from '../shared/fhir/repo/repo'
import type { Jobs } from '../shared/jobs/queues'
import type { Outbound } from '../shared/net/client'
import type { Redis } from '../shared/redis'
import type { RateCounts } from './http/rate-counts'
import type { SecretCipher } from '../shared/secrets/cipher'

export interface AppDeps {
  config: Config
  sql: Sql
  redis?: Redis
  /** Where the rate limits of every API node meet (Redis; undefined: each limit counted in this process). */
  rateCounts?: RateCounts
  repo: Repo
  verifier: ApiKeyVerifier
  jobs: Jobs
  secret: string
  cipher: SecretCipher
  outbound: Outbound
  /** The base URL of links patients and clients follow (config.ts publicBaseOf), fixed once listening. */
  publicBase: () => string
}
