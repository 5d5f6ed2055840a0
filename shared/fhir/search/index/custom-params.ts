// Custom search parameters: stored SearchParameter resources become searchable parameters of their base
// types. Every node loads them at start and reloads them when one is written here or, through Redis,
// on another node. Resources written before a parameter existed need $reindex to be found by it.
// https://hl7.org/fhir/R4/searchparameter.html
import type { Sql } from '../../../db/client'
import { AppError } from '../../../errors'
import { log } from '../../../log'
import type { Redis } from '../../../redis'
import type { SearchParamRegistry } from '../../repo/collaborators'
import type { NewVersion } from '../../repo/types'
import { compileExpression } from './evaluate'
import { isStandardSearchParam, searchParamDefsOf, setCustomSearchParams, type SearchParamDef } from '../registry'

const TYPES = new Set(['number', 'date', 'string', 'token', 'reference', 'composite', 'quantity', 'uri', 'special'])

/** The definitions a stored SearchParameter adds; throws `invalid` when it cannot be used. */
export function customDefsOf(sp: any): SearchParamDef[] {
  if (sp.status === 'retired' || isStandardSearchParam(sp.url)) return []
  if (!TYPES.has(sp.type)) throw new AppError('invalid', `HAPI-1113: SearchParameter.type "${sp.type}" is not valid`)
  if (typeof sp.code !== 'string' || !/^[A-Za-z0-9_-]+$/.test(sp.code)) throw new AppError('invalid', 'HAPI-1114: SearchParameter.code is missing or invalid')
  const defs = searchParamDefsOf(sp)
  if (defs.length === 0) throw new AppError('invalid', 'HAPI-1115: SearchParameter.base names no resource type with an expression')
  for (const def of defs) {
    if (!def.expression) continue
    try {
      compileExpression(def.expression, def.base)
    } catch (err) {
      throw new AppError('invalid', `HAPI-1121: The expression "${def.expression}" can not be evaluated and may be invalid: ${(err as Error).message}`)
    }
  }
  return defs
}

export async function loadCustomSearchParams(sql: Sql): Promise<number> {
  const rows = await sql<{ content: string }[]>`select content from resource where res_type = 'SearchParameter' and not deleted`
  const defs: SearchParamDef[] = []
  for (const row of rows) {
    try {
      defs.push(...customDefsOf(JSON.parse(row.content)))
    } catch (err) {
      log.warn('stored SearchParameter ignored', { err: (err as Error).message })
    }
  }
  setCustomSearchParams(defs)
  return defs.length
}

/** Keeps this node's registry in step with stored SearchParameters, across nodes when Redis is there. */
export class SearchParamSync implements SearchParamRegistry {
  private readonly channel: string

  constructor(
    private readonly sql: Sql,
    private readonly redis?: { pub: Redis; sub: Redis },
    prefix = 'fhir',
  ) {
    this.channel = `${prefix}:search-parameters-changed`
  }

  async start(): Promise<void> {
    await loadCustomSearchParams(this.sql)
    if (!this.redis) return
    await this.redis.sub.subscribe(this.channel)
    this.redis.sub.on('message', (channel) => {
      if (channel === this.channel) this.reload()
    })
  }

  /** Before a write: rejects unusable SearchParameters (the repository reloads after its commit). */
  check(written: NewVersion[]): boolean {
    const sps = written.filter((v) => v.type === 'SearchParameter')
    for (const v of sps) if (v.resource) customDefsOf(v.resource)
    return sps.length > 0
  }

  /** Stored SearchParameters changed (written or expunged): reload here (resolves when done) and on every other node. */
  changed(): Promise<void> {
    this.redis?.pub.publish(this.channel, '1').catch(() => {})
    return this.reload()
  }

  private reload(): Promise<void> {
    return loadCustomSearchParams(this.sql).then(
      () => {},
      (err) => log.error('reloading search parameters failed', { err: String(err) }),
    )
  }
}
