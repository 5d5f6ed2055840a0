// $meta, $meta-add, $meta-delete: the tags, security labels and profiles of a version, of a type or of
// the whole server, and changes to those of one version without a new version (HAPI 7.0 shapes:
// Parameters with `return` as valueMeta). https://hl7.org/fhir/R4/resource-operation-meta.html
import { AppError } from '../../errors'
import { parseFhirJson } from '../format/json'
import { deletedResource, unknownResource, unknownVersion } from '../resource-errors'
import type { FhirResponse, FhirServices } from '../request'
import { type Meta, addToMeta, deleteFromMeta, metaAnswer } from '../meta-change'
import { type ParameterPart, parameters } from './params'
import type { OperationDef, OperationTarget } from './types'

const answer = (meta: Meta): FhirResponse => ({ status: 200, resource: parameters({ name: 'return', valueMeta: meta } as ParameterPart) })

function versionOf(target: OperationTarget): number | undefined {
  if (target.version === undefined) return undefined
  return /^[0-9]{1,9}$/.test(target.version) ? Number(target.version) : -1
}

function notFound(target: OperationTarget, what: 'unknown-resource' | 'unknown-version'): AppError {
  const [type, id] = [target.type as string, target.id as string]
  return what === 'unknown-resource' ? unknownResource(type, id) : unknownVersion(type, id, target.version as string)
}

async function readMeta(ctx: Pick<FhirServices, 'repo' | 'search'>, target: OperationTarget): Promise<FhirResponse> {
  if (target.level === 'system' || target.level === 'type') {
    const inUse = await ctx.search.metaInUse(target.type)
    const meta: Meta = {}
    for (const k of ['profile', 'security', 'tag'] as const) if (inUse[k].length > 0) meta[k] = inUse[k] as any
    return answer(meta)
  }
  const version = versionOf(target)
  const type = target.type as string
  const id = target.id as string
  const stored = version === undefined ? await ctx.repo.read(type, id) : await ctx.repo.vread(type, id, version)
  if (!stored) throw notFound(target, version === undefined || !(await ctx.repo.read(type, id)) ? 'unknown-resource' : 'unknown-version')
  // A deletion has no content, so no meta to show or change.
  if (stored.deleted) throw deletedResource(stored)
  return answer(metaAnswer(parseFhirJson(stored.content as string).meta, stored))
}

/**
 * Applies `edit` to the meta of the target version in one transaction: the content is rewritten in
 * place (same versionId and lastUpdated) and, for the current version, its index rows recomputed.
 */
async function changeMeta(ctx: Pick<FhirServices, 'repo'>, target: OperationTarget, edit: (meta: Meta) => Meta): Promise<FhirResponse> {
  const meta = await ctx.repo.transaction(async (w) => {
    const locked = await w.lockVersion(target.type as string, target.id as string, versionOf(target))
    if (typeof locked === 'string') throw notFound(target, locked)
    const { stored } = locked
    if (stored.deleted) throw deletedResource(stored)
    const resource = parseFhirJson(stored.content as string)
    const changed = withMeta(resource, edit(resource.meta ?? {}))
    await w.replaceContent(locked, JSON.stringify(changed), changed)
    return metaAnswer(changed.meta, stored)
  })
  return answer(meta)
}

/** The resource with `meta` in place of its meta, keys in the stored order (resourceType, id, meta, ...). */
function withMeta(resource: any, meta: Meta): any {
  const { resourceType, id, meta: _old, ...rest } = resource
  return { resourceType, id, ...(Object.keys(meta).length > 0 ? { meta } : {}), ...rest }
}

/** The `meta` parameter (valueMeta), or 400 with HAPI's code for the operation. */
function metaParam(value: unknown, code: string): Meta {
  if (value === undefined || value === null) throw new AppError('invalid', `${code}: Input contains no parameter with name 'meta'`)
  if (typeof value !== 'object' || Array.isArray(value)) throw new AppError('invalid', `${code}: Parameter 'meta' must be a Meta (valueMeta)`)
  return value as Meta
}

export const operations: OperationDef[] = [
  {
    name: '$meta',
    levels: ['system', 'type', 'instance', 'version'],
    methods: ['GET', 'POST'],
    // One of the spec's administrative operations, like the two below: the admin scope (issue 6).
    scope: 'admin',
    handler: (_req, ctx, target) => readMeta(ctx, target),
  },
  {
    name: '$meta-add',
    levels: ['instance', 'version'],
    methods: ['POST'],
    scope: 'admin',
    handler: (_req, ctx, target, input) => {
      const add = metaParam(input.value('meta'), 'HAPI-0554')
      return changeMeta(ctx, target, (meta) => addToMeta(meta, add))
    },
  },
  {
    name: '$meta-delete',
    levels: ['instance', 'version'],
    methods: ['POST'],
    scope: 'admin',
    handler: (_req, ctx, target, input) => {
      const remove = metaParam(input.value('meta'), 'HAPI-0555')
      return changeMeta(ctx, target, (meta) => deleteFromMeta(meta, remove))
    },
  },
]
