// $reindex (system level as a job, instance level at once), and HAPI's legacy
// $mark-all-resources-for-reindexing and $perform-reindexing-pass. All need the admin scope.
// HAPI: ReindexProvider, InstanceReindexProvider, BaseJpaSystemProvider.
import { AppError } from '../../errors'
import { startAdminJob } from '../../jobs/admin-job'
import { isResourceType } from '../definitions/resource-types'
import { markAllForReindexing, performReindexingPass } from '../reindex/reindex-pass'
import { reindexBatch } from '../reindex/reindex-batch'
import { DEFAULT_BATCH, type ReindexParams, reindexSelection } from '../reindex/reindex-job'
import { INDEX_TABLES } from '../search/index-store'
import type { FhirContext } from '../request'
import { type OperationInput, type ParameterPart, parameters } from './params'
import type { OperationDef, OperationTarget } from './types'

const indexBaseUrl = (ctx: FhirContext) => (ctx.config.publicBaseUrl ? `${ctx.config.publicBaseUrl}/fhir` : undefined)

function oneOf<T extends string>(input: OperationInput, name: string, allowed: readonly T[], fallback: T): T {
  const v = input.string(name)
  if (v === undefined) return fallback
  if (!(allowed as readonly string[]).includes(v))
    throw new AppError('invalid', `Invalid value for parameter "${name}": "${v}" (expected one of ${allowed.join(', ')})`)
  return v as T
}

async function reindexSystem(ctx: FhirContext, input: OperationInput) {
  if (!ctx.jobs) throw new AppError('fault', '$reindex needs the job queues')
  const urls = input.values('url').map((u) => String(u).trim().replace(/^\//, ''))
  const params: ReindexParams = {
    urls,
    reindexSearchParameters: oneOf(input, 'reindexSearchParameters', ['ALL', 'NONE'] as const, 'ALL'),
    optimizeStorage: oneOf(input, 'optimizeStorage', ['NONE', 'CURRENT_VERSION', 'ALL_VERSIONS'] as const, 'NONE'),
    optimisticLock: input.boolean('optimisticLock') ?? true,
    baseUrl: ctx.baseUrl,
    indexBaseUrl: indexBaseUrl(ctx),
    batchSize: input.integer('batchSize') ?? DEFAULT_BATCH,
  }
  if ((params.batchSize as number) < 1 || (params.batchSize as number) > 10_000) throw new AppError('invalid', 'batchSize must be from 1 to 10000')
  for (const u of urls) reindexSelection(ctx.repo.sql, u, ctx.baseUrl) // 400 before anything is queued
  const key = `reindex:${JSON.stringify([...urls].sort())}:${params.reindexSearchParameters}:${params.optimizeStorage}`
  const job = await startAdminJob(ctx.repo.sql, ctx.jobs, 'reindex', params, key)
  return { status: 200, resource: parameters({ name: 'jobId', valueString: job.id }) }
}

/** Reindexes one resource now and reports, per search parameter, whether its index rows changed. */
async function reindexInstance(ctx: FhirContext, target: OperationTarget) {
  const type = target.type as string
  const id = target.id as string
  const sql = ctx.repo.sql
  const report = await sql.begin(async (tx) => {
    const [row] = await tx<{ rid: string; version: number; deleted: boolean; content: string }[]>`
      select rid::text, version, deleted, content from resource where res_type = ${type} and id = ${id} for update`
    if (!row) throw new AppError('not-found', `HAPI-2001: Resource ${type}/${id} is not known`)
    if (row.deleted) throw new AppError('gone', `HAPI-2002: Resource ${type}/${id} was deleted`)
    const before = await indexCounts(tx, row.rid)
    await reindexBatch(tx, [{ rid: row.rid, type, version: row.version, content: row.content }], indexBaseUrl(ctx), true)
    const after = await indexCounts(tx, row.rid)
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

async function indexCounts(tx: any, rid: string): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (const table of INDEX_TABLES) {
    if (table === 'idx_fulltext') continue
    const rows = await tx`select code, count(*)::int as n from ${tx(table)} where rid = ${rid} group by code`
    for (const r of rows) out.set(`${table} ${r.code}`, r.n)
  }
  return out
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
      await markAllForReindexing(ctx.repo.sql, type)
      return { status: 200, resource: parameters({ name: 'status', valueString: 'Marked resources' }) }
    },
  },
  {
    name: '$perform-reindexing-pass',
    levels: ['system'],
    methods: ['POST'],
    scope: 'admin',
    async handler(_req, ctx) {
      const n = await performReindexingPass(ctx.repo.sql, indexBaseUrl(ctx))
      const status = n === undefined ? 'Index pass already proceeding' : `Indexed ${n} resources`
      return { status: 200, resource: parameters({ name: 'status', valueString: status }) }
    },
  },
]
