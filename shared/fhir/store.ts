// The resource store as every process uses it: the repository with the search index writer attached.
import type { Config } from '../config'
import type { Sql } from '../db/client'
import { Repo } from './repo/repo'
import { indexWriter } from './search/index-store'

export function createRepo(sql: Sql, config: Config): Repo {
  const repo = new Repo(sql)
  repo.addWriteHook(indexWriter(config.publicBaseUrl ? `${config.publicBaseUrl}/fhir` : undefined))
  return repo
}
