// The resource store as every process uses it: the repository built with its collaborators, each
// named for what it keeps in step with the stored resources (repo/collaborators.ts).
import type { Config } from '../config'
import type { Sql } from '../db/client'
import type { Redis } from '../redis'
import { referentialIntegrity } from './repo/referential-integrity'
import { Repo } from './repo/repo'
import { SearchParamSync } from './search/index/custom-params'
import { copyingIndexWriter } from './search/index/index-copy'
import { indexWriter } from './search/index/index-store'
import { terminologyMaintenance } from './terminology/maintenance'

export async function createRepo(sql: Sql, config: Config, redis?: { pub: Redis; sub: Redis }): Promise<Repo> {
  const searchParams = new SearchParamSync(sql, redis, config.queuePrefix)
  await searchParams.start()
  return new Repo(
    sql,
    {
      // PGlite (the embedded form, no DATABASE_URL) never answers COPY FROM STDIN over its socket: a bulk
      // import there writes its rows with the statement's CTEs.
      indexes: (config.databaseUrl ? copyingIndexWriter : indexWriter)(config.publicBaseUrl ? `${config.publicBaseUrl}/fhir` : undefined),
      integrity: referentialIntegrity({ onWrite: config.enforceReferentialIntegrity }),
      terminology: terminologyMaintenance(sql),
      searchParams,
    },
    config.databaseUrl ? config.limits.statementTimeoutMs.write : 0,
  )
}
