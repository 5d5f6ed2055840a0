// $reindex (system level as a job, instance level at once), and HAPI's legacy
// $mark-all-resources-for-reindexing and $perform-reindexing-pass. All need the admin scope.
// HAPI: ReindexProvider, InstanceReindexProvider, BaseJpaSystemProvider.
import { AppError } from '../../errors'
import { startAdminJob } from '../../jobs/admin-job'
import { isResourceType } from '../definitions/resource-types'
import { DEFAULT_BATCH, type ReindexParams, reindexSelection } from '../reindex/reindex-job'
import type { FhirServices } from '../request'
import { liveVersion } from '../resource-errors'
import { type OperationInput, type ParameterPart, parameters } from './params'
import type { OperationDef, OperationTarget } from './types'

function oneOf<T extends string>(input: OperationInput, name: string, allowed: readonly T[], fallback: T): T {
  const v = input.string(name)
  if (v === undefined) return fallback
  if (!(allowed as readonly string[]).includes(v))
    throw new AppError('invalid', `Invalid value for parameter "${name}": "${v}" (expected one of ${allowed.join(', ')})`)
  return v as T
}

async function reindexSystem(ctx: Pick<FhirServices, 'repo' | 'search' | 'jobs' | 'baseUrl'>, input: OperationInput) {
  if (!ctx.jobs) throw new AppError('fault', '$reindex needs the job queues')
  const urls = input.values('url').map((u) => String(u).trim().replace(/^\//, ''))
  const params: ReindexParams = {
    urls,
    reindexSearchParameters: oneOf(input, 'reindexSearchParameters', ['ALL', 'NONE'] as const, 'ALL'),
    optimizeStorage: oneOf(input, 'optimizeStorage', ['NONE', 'CURRENT_VERSION', 'ALL_VERSIONS'] as const, 'NONE'),
    optimisticLock: input.boolean('optimisticLock') ?? true,
    baseUrl: ctx.baseUrl,
    batchSize: input.integer('batchSize') ?? DEFAULT_BATCH,
  }
  if ((params.batchSize as number) < 1 || (params.batchSize as number) > 10_000) throw new AppError('invalid', 'batchSize must be from 1 to 10000')
  for (const u of urls) reindexSelection(ctx.search, u, ctx.baseUrl) // 400 before anything is queued
  const key = `reindex:${JSON.stringify([...urls].sort())}:${params.reindexSearchParameters}:${params.optimizeStorage}`
  const job = await startAdminJob(ctx.repo.sql, ctx.jobs, 'reindex', params, key)
  return { status: 200, resource: parameters({ name: 'jobId', valueString: job.id }) }
}

/** Reindexes one resource now and reports, per search parameter, whether its index rows changed. */
async function reindexInstance(ctx: Pick<FhirServices, 'repo'>, target: OperationTarget) {
  const type = target.type as string
  const id = target.id as string
  const report = await ctx.repo.transaction(async (w) => {
    const current = liveVersion((await w.lock([{ type, id }])).get(`${type}/${id}`), type, id)
    const before = await w.indexRowCounts(current.rid)
    await w.reindexRows([{ rid: current.rid, type, version: current.version, content: current.content as string }], { fulltext: true })
    const after = await w.indexRowCounts(current.rid)
    return { before, after }
  })
  const codes = [...new Set([...report.before.keys(), ...report.after.keys()])].sort()
  const parts: ParameterPart[] = codes.map((key) => {
    const [table, code] = key.split(' ') as [string, string]
    const b = report.before.get(key) ?? 0
    const a = report.after.get(key) ?? 0
    const action = b === 0 && a > 0 ? 'Add' : a === 0 && b > 0 ? 'Remove' : a === b ? 'NoChange' : 'Update'
    return {
      name: code,
      part: [
        { name: 'Type', valueCode: table.replace(/^idx_/, '') },
        { name: 'Action', valueCode: action },
        { name: 'Rows', valueInteger: a },
      ],
    }
  })
  const narrative = `<div xmlns="http://www.w3.org/1999/xhtml"><p>Reindexed ${type}/${id}: ${codes.length} index entries checked</p></div>`
  return { status: 200, resource: parameters({ name: 'Narrative', valueString: narrative }, { name: 'SearchParameters', part: parts } as ParameterPart) }
}

export const operations: OperationDef[] = [
  {
    name: '$reindex',
    levels: ['system'],
    methods: ['POST'],
    scope: 'admin',
    handler: (_req, ctx, _t, input) => reindexSystem(ctx, input),
  },
  {
    name: '$reindex',
    levels: ['instance'],
    methods: ['POST'],
    scope: 'admin',
    handler: (_req, ctx, t) => reindexInstance(ctx, t),
  },
  {
    name: '$mark-all-resources-for-reindexing',
    levels: ['system'],
    methods: ['POST'],
    scope: 'admin',
    async handler(_req, ctx, _t, input) {
      const type = input.string('type')
      if (type !== undefined && !isResourceType(type)) throw new AppError('invalid', `HAPI-1170: Unknown resource type: ${type}`)
      await ctx.repo.markAllForReindexing(type)
      return { status: 200, resource: parameters({ name: 'status', valueString: 'Marked resources' }) }
    },
  },
  {
    name: '$perform-reindexing-pass',
    levels: ['system'],
    methods: ['POST'],
    scope: 'admin',
    async handler(_req, ctx) {
      const n = await ctx.repo.performReindexingPass()
      const status = n === undefined ? 'Index pass already proceeding' : `Indexed ${n} resources`
      return { status: 200, resource: parameters({ name: 'status', valueString: status }) }
    },
  },
]
