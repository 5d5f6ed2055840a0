// $expunge at system, type, instance and version level, as HAPI FHIR JPA 7.0 (BaseJpaProvider.doExpunge):
// POST with limit (default 1000 versions), expungeDeletedResources, expungePreviousVersions and, at system
// level only, expungeEverything; answers Parameters {count}. Runs in batches (shared/fhir/repo/expunge.ts).
// https://hapifhir.io/hapi-fhir/docs/server_jpa/configuration.html
import { AppError } from '../../errors'
import { expunge, expungeEverything, type ExpungeOutcome } from '../repo/expunge'
import type { FhirContext, FhirResponse } from '../request'
import { type OperationInput, parameters } from './params'
import type { OperationDef, OperationTarget } from './types'

const DEFAULT_LIMIT = 1000

async function expungeOperation(ctx: FhirContext, target: OperationTarget, input: OperationInput): Promise<FhirResponse> {
  if (!ctx.config.expungeEnabled) throw new AppError('not-allowed', 'HAPI-0968: $expunge is not enabled on this server')
  const limit = input.integer('limit') ?? DEFAULT_LIMIT
  if (limit < 1) throw new AppError('invalid', `HAPI-1087: Expunge limit may not be less than 1.  Received expunge limit ${limit}.`)
  const deletedResources = input.boolean('expungeDeletedResources') ?? false
  const previousVersions = input.boolean('expungePreviousVersions') ?? false
  const everything = input.boolean('expungeEverything') ?? false
  if (everything && target.level !== 'system')
    throw new AppError('invalid', 'expungeEverything is only allowed at the system level ([base]/$expunge)')
  let outcome: ExpungeOutcome
  if (everything) outcome = await expungeEverything(ctx.repo.sql)
  else {
    const scope = target.level === 'system' ? {} : { type: target.type, ...(await resolve(ctx, target)) }
    outcome = await expunge(ctx.repo.sql, scope, { limit, deletedResources, previousVersions })
  }
  await ctx.repo.removed(outcome.removedTypes)
  return { status: 200, resource: parameters({ name: 'count', valueInteger: outcome.count }) }
}

/** The rid (and version) of an instance- or version-level target; 404 when unknown, 412 for the current version. */
async function resolve(ctx: FhirContext, target: OperationTarget): Promise<{ rid?: string; version?: number }> {
  if (target.level === 'type') return {}
  const ref = `${target.type}/${target.id}`
  const current = await ctx.repo.read(target.type as string, target.id as string)
  if (!current) throw new AppError('not-found', `HAPI-2001: Resource ${ref} is not known`)
  if (target.level === 'instance') return { rid: current.rid }
  const version = /^[0-9]{1,9}$/.test(target.version as string) ? Number(target.version) : Number.NaN
  if (version === current.version)
    throw new AppError('precondition-failed', `HAPI-0969: Can not perform version-specific expunge of resource ${ref}/_history/${version} as this is the current version`)
  if (Number.isNaN(version) || !(await ctx.repo.vread(target.type as string, target.id as string, version)))
    throw new AppError('not-found', `HAPI-0979: Version "${target.version}" is not valid for resource ${ref}`)
  return { rid: current.rid, version }
}

export const operations: OperationDef[] = [
  {
    name: '$expunge',
    levels: ['system', 'type', 'instance', 'version'],
    methods: ['POST'],
    scope: 'admin',
    handler: (_req, ctx, target, input) => expungeOperation(ctx, target, input),
  },
]
