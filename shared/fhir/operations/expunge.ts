// $expunge at system, type, instance and version level, as HAPI FHIR JPA 7.0 (BaseJpaProvider.doExpunge):
// POST with limit (default 1000 versions), expungeDeletedResources, expungePreviousVersions and, at system
// level only, expungeEverything; answers Parameters {count}. Runs in batches (shared/fhir/repo/expunge.ts).
// https://hapifhir.io/hapi-fhir/docs/server_jpa/configuration.html
import { AppError } from '../../errors'
import { startAdminJob, waitForAdminJob } from '../../jobs/admin-job'
import type { ExpungeParams } from '../repo/expunge-job'
import { unknownResource, unknownVersion } from '../resource-errors'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { type OperationInput, parameters } from './params'
import type { OperationDef, OperationTarget } from './types'

const DEFAULT_LIMIT = 1000

/** How long the request waits for the job before answering 202 with the job's status address. */
const WAIT_MS = 10 * 60_000

async function expungeOperation(
  req: FhirRequest,
  ctx: Pick<FhirContext, 'repo' | 'config' | 'jobs' | 'baseUrl'>,
  target: OperationTarget,
  input: OperationInput,
): Promise<FhirResponse> {
  if (!ctx.config.expungeEnabled) throw new AppError('not-allowed', 'HAPI-0968: $expunge is not enabled on this server')
  const limit = input.integer('limit') ?? DEFAULT_LIMIT
  if (limit < 1) throw new AppError('invalid', `HAPI-1087: Expunge limit may not be less than 1.  Received expunge limit ${limit}.`)
  const deletedResources = input.boolean('expungeDeletedResources') ?? false
  const previousVersions = input.boolean('expungePreviousVersions') ?? false
  const everything = input.boolean('expungeEverything') ?? false
  if (everything && target.level !== 'system') throw new AppError('invalid', 'expungeEverything is only allowed at the system level ([base]/$expunge)')
  const scope = everything || target.level === 'system' ? {} : { type: target.type, ...(await resolve(ctx, target)) }
  const params: ExpungeParams = { everything, scope, options: { limit, deletedResources, previousVersions } }
  if (!ctx.jobs) throw new AppError('fault', '$expunge needs the job queues')
  // It runs as an admin job (progress at /admin/jobs/{id}); the answer waits for it, as HAPI's does,
  // unless the client asks for `Prefer: respond-async`.
  const job = await startAdminJob(ctx.repo.sql, ctx.jobs, 'expunge', params, `expunge:${JSON.stringify(params)}`)
  const statusUrl = `${ctx.baseUrl.replace(/\/fhir$/, '')}/admin/jobs/${job.id}`
  const async = /respond-async/.test(req.headers.prefer ?? '')
  const done = async ? undefined : await waitForAdminJob(ctx.repo.sql, job.id, WAIT_MS)
  if (!done) return { status: 202, contentLocation: statusUrl, resource: parameters({ name: 'jobId', valueString: job.id }) }
  if (done.state !== 'completed') {
    const error = done.error as { status?: number; message?: string } | null
    throw new AppError(error?.status === 400 ? 'invalid' : 'fault', `$expunge job ${job.id} ${done.state}: ${error?.message ?? ''}`)
  }
  return { status: 200, resource: parameters({ name: 'count', valueInteger: (done.result as { count: number }).count }) }
}

/** The rid (and version) of an instance- or version-level target; 404 when unknown, 412 for the current version. */
async function resolve(ctx: Pick<FhirContext, 'repo'>, target: OperationTarget): Promise<{ rid?: string; version?: number }> {
  if (target.level === 'type') return {}
  const [type, id] = [target.type as string, target.id as string]
  const ref = `${type}/${id}`
  const current = await ctx.repo.read(type, id)
  if (!current) throw unknownResource(type, id)
  if (target.level === 'instance') return { rid: current.rid }
  const version = /^[0-9]{1,9}$/.test(target.version as string) ? Number(target.version) : Number.NaN
  if (version === current.version)
    throw new AppError(
      'precondition-failed',
      `HAPI-0969: Can not perform version-specific expunge of resource ${ref}/_history/${version} as this is the current version`,
    )
  if (Number.isNaN(version) || !(await ctx.repo.vread(type, id, version))) throw unknownVersion(type, id, target.version as string)
  return { rid: current.rid, version }
}

export const operations: OperationDef[] = [
  {
    name: '$expunge',
    levels: ['system', 'type', 'instance', 'version'],
    methods: ['POST'],
    scope: 'admin',
    handler: (req, ctx, target, input) => expungeOperation(req, ctx, target, input),
  },
]
