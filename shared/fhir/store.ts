// The resource store as every process uses it: the repository with the search index writer and the
// custom search parameter sync attached.
import type { Config } from '../config'
import type { Sql } from '../db/client'
import type { Redis } from '../redis'
import { referentialIntegrityHook } from './referential-integrity'
import { Repo } from './repo/repo'
import { SearchParamSync } from './search/custom-params'
import { indexWriter } from './search/index-store'
import { invalidateExpansions } from './terminology/expansion'
import { terminologyHook } from './terminology/write-hook'

export async function createRepo(sql: Sql, config: Config, redis?: { pub: Redis; sub: Redis }): Promise<Repo> {
  const repo = new Repo(sql)
  const sync = new SearchParamSync(sql, redis, config.queuePrefix)
  await sync.start()
  repo.addWriteHook(sync.hook())
  repo.onRemoved((types) => (types.includes('SearchParameter') ? sync.changed() : undefined))
  if (config.enforceReferentialIntegrity) repo.addWriteHook(referentialIntegrityHook())
  repo.addWriteHook(indexWriter(config.publicBaseUrl ? `${config.publicBaseUrl}/fhir` : undefined))
  repo.addWriteHook(terminologyHook())
  repo.onRemoved((types) => (types.includes('CodeSystem') || types.includes('ValueSet') ? invalidateExpansions(sql) : undefined))
  return repo
}
